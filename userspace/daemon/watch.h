/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The files a policy names by path (a rule's, an allow's names,
 * internal_bypass) are bound at its load to the files found then (device
 * and inode: the kernel judges by those). A package upgrade renames a new
 * file into place. files_watch() watches the directories those files are
 * in and calls changed() once they have settled after a change (2 s); NULL
 * (*ret_err 0) when there is nothing to watch.
 */
#ifndef EG_DAEMON_WATCH_H
#define EG_DAEMON_WATCH_H

struct eg_loop;
struct eg_policy;
struct files_watch;

struct files_watch *files_watch(struct eg_loop *loop, const struct eg_policy *p, void (*changed)(void *arg),
				void *arg, int *ret_err);
void files_watch_free(struct files_watch *fw);

#endif
