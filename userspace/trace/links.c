// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tracer's links: handed to the next daemon as fds (a handover), and
 * pinned under PIN/links (--persist, --enforce) in two steps, each new
 * link pinned beside the old one first (new_NAME) and then renamed over
 * it, so that every hook keeps a program of one copy or the other at
 * every instant, and a start that fails partway leaves the old set whole.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "execgate.skel.h"
#include "trace/tracer.h"
#include "util/log.h"
#include "util/paths.h"

static struct bpf_link *prog_link(struct execgate_bpf *skel, struct bpf_program *p)
{
#define LINK(name) if (p == skel->progs.name) return skel->links.name
	LINK(handle_prepare_exec);
	LINK(handle_fork);
	LINK(handle_exec);
	LINK(handle_exit);
	LINK(handle_exit_execve);
	LINK(handle_exit_execveat);
	LINK(handle_exit_mmap);
	LINK(handle_cgroup_mkdir);
	LINK(handle_cgroup_rmdir);
	LINK(enforce_bprm);
#undef LINK
	return NULL;
}

int tracer_link_fds(struct execgate_bpf *skel, int *fds, int max)
{
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_link *l = prog_link(skel, p);

		if (l && n < max)
			fds[n++] = bpf_link__fd(l);
	}
	return n;
}

/* dir/new_NAME renamed over dir/NAME: an earlier daemon's link of that name, unpinned, detaches. */
static int promote_new(const char *dir, const char *name)
{
	char from[PATH_MAX], to[PATH_MAX];

	snprintf(from, sizeof(from), "%s/" EG_PIN_NEW_PREFIX "%s", dir, name);
	snprintf(to, sizeof(to), "%s/%s", dir, name);
	if (rename(from, to)) {
		int err = -errno;

		p_dbg("cannot rename %s to %s: %s", from, to, strerror(-err));
		return err;
	}
	return 0;
}

static int pin_link_new(struct bpf_link *l, const char *dir, const char *name)
{
	char path[PATH_MAX];
	int err;

	snprintf(path, sizeof(path), "%s/" EG_PIN_NEW_PREFIX "%s", dir, name);
	/*
	 * A leftover: a start whose renames stopped partway kept it, and its
	 * copy may be the one to act again if ours fails. It takes its name.
	 */
	if (!access(path, F_OK) && (err = promote_new(dir, name)))
		return err;
	if (bpf_obj_pin(bpf_link__fd(l), path)) {
		err = -errno;
		p_dbg("cannot pin link fd %d at %s: %s", bpf_link__fd(l), path, strerror(-err));
		return err;
	}
	return 0;
}

/* Calls fn(ctx, link, name) for each link to pin: the programs', then the extra ones. */
static int each_link(struct execgate_bpf *skel, struct bpf_link **extra, int n_extra,
		     int (*fn)(void *ctx, struct bpf_link *l, const char *name), void *ctx)
{
	struct bpf_program *p;
	char name[64];
	int i, err;

	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_link *l = prog_link(skel, p);

		if (!l)
			continue;
		err = fn(ctx, l, bpf_program__name(p));
		if (err)
			return err;
	}
	for (i = 0; i < n_extra; i++) {
		/* no '.' in names: older bpffs reserves them (EPERM) */
		snprintf(name, sizeof(name), "enforce_bprm_cgroup_%d", i);
		err = fn(ctx, extra[i], name);
		if (err)
			return err;
	}
	return 0;
}

struct pin_pass {
	const char *dir;
	bool touched;
};

static int pin_new(void *ctx, struct bpf_link *l, const char *name)
{
	return pin_link_new(l, ((struct pin_pass *)ctx)->dir, name);
}

static int drop_new(void *ctx, struct bpf_link *l, const char *name)
{
	char path[PATH_MAX];

	(void)l;
	snprintf(path, sizeof(path), "%s/" EG_PIN_NEW_PREFIX "%s", ((struct pin_pass *)ctx)->dir, name);
	unlink(path);
	return 0;
}

static int pin_replace(void *ctx, struct bpf_link *l, const char *name)
{
	struct pin_pass *pp = ctx;
	int err = promote_new(pp->dir, name);

	(void)l;
	if (!err)
		pp->touched = true;
	return err;
}

int tracer_pin_links_prepare(struct execgate_bpf *skel, const char *dir, struct bpf_link **extra,
			     int n_extra)
{
	char ldir[PATH_MAX];
	struct pin_pass pp = { .dir = ldir };
	int err;

	snprintf(ldir, sizeof(ldir), "%s/links", dir);
	if (mkdir(ldir, 0700) && errno != EEXIST)
		return -errno;
	err = each_link(skel, extra, n_extra, pin_new, &pp);
	if (err)
		each_link(skel, extra, n_extra, drop_new, &pp);
	return err;
}

void tracer_pin_links_abort(struct execgate_bpf *skel, const char *dir, struct bpf_link **extra, int n_extra)
{
	char ldir[PATH_MAX];
	struct pin_pass pp = { .dir = ldir };

	snprintf(ldir, sizeof(ldir), "%s/links", dir);
	each_link(skel, extra, n_extra, drop_new, &pp);
}

struct is_ours {
	const char *name;
	bool found;
};

static int match_name(void *ctx, struct bpf_link *l, const char *name)
{
	struct is_ours *o = ctx;

	(void)l;
	o->found |= !strcmp(o->name, name);
	return 0;
}

/*
 * What no link of ours is pinned as: an earlier daemon's links at hooks we
 * do not use (its extra cgroup links, a global enforce_bprm before
 * --cgroup), a killed start's new_ pins.
 */
static void sweep_links(struct execgate_bpf *skel, struct bpf_link **extra, int n_extra, const char *ldir)
{
	struct dirent *de;
	DIR *dp;

	dp = opendir(ldir);
	if (!dp)
		return;
	while ((de = readdir(dp))) {
		struct is_ours o = { .name = de->d_name };

		if (de->d_name[0] == '.')
			continue;
		each_link(skel, extra, n_extra, match_name, &o);
		if (!o.found)
			unlinkat(dirfd(dp), de->d_name, 0);
	}
	closedir(dp);
}

int tracer_pin_links_commit(struct execgate_bpf *skel, const char *dir, struct bpf_link **extra, int n_extra,
			    bool *ret_touched)
{
	char ldir[PATH_MAX];
	struct pin_pass pp = { .dir = ldir };
	int err;

	snprintf(ldir, sizeof(ldir), "%s/links", dir);
	err = each_link(skel, extra, n_extra, pin_replace, &pp);
	if (ret_touched)
		*ret_touched = pp.touched;
	/*
	 * A rename that failed after others: the new_ pins left keep our links
	 * attached, so that every hook has this copy's program (the earlier
	 * copy's, whose pins stay, no longer acts).
	 */
	if (err)
		return err;
	sweep_links(skel, extra, n_extra, ldir);
	return 0;
}

int tracer_pin_links(struct execgate_bpf *skel, const char *dir, struct bpf_link **extra, int n_extra)
{
	int err = tracer_pin_links_prepare(skel, dir, extra, n_extra);

	return err ? err : tracer_pin_links_commit(skel, dir, extra, n_extra, NULL);
}

int tracer_unpin_links(const char *dir)
{
	char ldir[PATH_MAX];

	snprintf(ldir, sizeof(ldir), "%s/links", dir);
	return tracer_unpin_dir(ldir);
}

