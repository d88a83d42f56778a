/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Changes to a running process's task storage, made in the kernel (bpf/amend.bpf.c). */
#ifndef EG_TRACE_AMEND_H
#define EG_TRACE_AMEND_H

#include <stdint.h>
#include <sys/types.h>
#include "execgate.h"

struct task_amender;

/*
 * Loads the iterator on tasks_fd ("tasks") and runs it once on this
 * process. 0 or -errno (the kernel refused it: -EOPNOTSUPP before 6.1 in
 * a pid namespace of its own).
 */
int task_amender_open(int tasks_fd, struct task_amender **ret);
void task_amender_close(struct task_amender *sd);
/*
 * Makes the change s asks in the storage of process pid, which pidfd
 * names (its leader's), writing only the fields asked: nothing the task's
 * own programs wrote is put back. With s->exec_ktime, only on that image
 * (else EG_AMEND_CHANGED). s->result says what came of it (0: no such
 * process). One caller at a time. 0, or -errno when the kernel refused
 * to run the iterator (nothing changed).
 */
int task_amender_apply(struct task_amender *sd, int pidfd, pid_t pid, struct eg_amend *s);
/*
 * The depth of pid's current image set to depth, looked at again and
 * asked again if an exec made meanwhile undid it. 0, -ESRCH, -EAGAIN, or
 * another -errno.
 */
int task_amender_set_depth(struct task_amender *sd, int tasks_fd, pid_t pid, int depth);

#endif
