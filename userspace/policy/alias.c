// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Names the system gave a file count for an allow. The file that runs is
 * judged, not its spelling, so `basenames: [gcc]` alone would not allow
 * Debian's gcc (/usr/bin/gcc -> gcc-12 -> x86_64-linux-gnu-gcc-12). At
 * load, each name an allow rule lists is looked up in the system's
 * command directories (and /etc/alternatives): when every link on the way
 * to a regular file is root's own, in directories only root can write,
 * that file's identity is one the rule allows by that name. A link a user
 * made (in a directory the user can write, or owned by the user) grants
 * nothing; deny rules need none of this (they meet the spelled name too).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "policy/internal.h"
#include "util/fileid.h"

static const char *const alias_dirs[] = {
	"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
	"/etc/alternatives", NULL,
};

#define ALIAS_HOPS	16	/* links followed at most (the kernel's own limit is 40) */

/* dir (resolved) and every directory above it: root's, nobody else may write them */
static bool trusted_dir(const char *dir)
{
	char real[PATH_MAX];

	if (!realpath(dir, real))
		return false;
	return eg_trusted_dirs(real);
}

/*
 * Follows name in dir to the file it leads to, through root's own links
 * only. Fills *ret with the file's identity and returns true when there was
 * at least one link and every step was trusted.
 */
static bool follow(const char *dir, const char *name, struct eg_file_id *ret)
{
	char cur[PATH_MAX], next[PATH_MAX], target[PATH_MAX];
	struct stat st;
	int hops;
	ssize_t n;

	if (snprintf(cur, sizeof(cur), "%s/%s", dir, name) >= (int)sizeof(cur))
		return false;
	for (hops = 0; hops <= ALIAS_HOPS; hops++) {
		char *slash;

		if (lstat(cur, &st))
			return false;
		/* the step's directory: root's alone (resolved: /bin is a link on merged-/usr systems) */
		snprintf(next, sizeof(next), "%s", cur);
		slash = strrchr(next, '/');
		if (!slash)
			return false;
		*slash = '\0';
		if (!trusted_dir(next[0] ? next : "/"))
			return false;
		if (S_ISREG(st.st_mode)) {
			if (!hops || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
				return false;
			ret->dev = eg_kdev(st.st_dev);
			ret->ino = st.st_ino;
			return true;
		}
		if (!S_ISLNK(st.st_mode) || st.st_uid != 0)
			return false;
		n = readlink(cur, target, sizeof(target) - 1);
		if (n <= 0)
			return false;
		target[n] = '\0';
		if (target[0] == '/') {
			snprintf(cur, sizeof(cur), "%s", target);
		} else if (snprintf(cur, sizeof(cur), "%s/%s", next, target) >= (int)sizeof(cur)) {
			return false;
		}
	}
	return false;
}

static int add_alias(struct eg_rule *r, struct eg_file_id id)
{
	struct eg_file_id *v;
	uint32_t i;

	for (i = 0; i < r->n_alias_ids; i++)
		if (r->alias_ids[i].dev == id.dev && r->alias_ids[i].ino == id.ino)
			return 0;
	v = realloc(r->alias_ids, (r->n_alias_ids + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->alias_ids = v;
	v[r->n_alias_ids++] = id;
	return 0;
}

int eg_alias_compile(struct eg_policy *p)
{
	uint32_t i, j, k;

	if (p->no_files)
		return 0;	/* a session's policy opens no file of the daemon's */
	for (i = 0; i < p->n_rules; i++) {
		struct eg_rule *r = &p->rules[i];

		if (r->decision != EG_DECISION_ALLOW)
			continue;
		for (j = 0; j < r->basenames.n; j++) {
			for (k = 0; alias_dirs[k]; k++) {
				struct eg_file_id id;

				if (follow(alias_dirs[k], r->basenames.v[j], &id) && add_alias(r, id))
					return -ENOMEM;
			}
		}
		/* the array is final now: the table borrows its keys */
		for (j = 0; j < r->n_alias_ids; j++)
			if (eg_htab_add_key(&p->by_alias, (const char *)&r->alias_ids[j],
					    sizeof(r->alias_ids[j]), i))
				return -ENOMEM;
	}
	return 0;
}

void eg_alias_dirs(void (*fn)(const char *dir, void *arg), void *arg)
{
	int k;

	for (k = 0; alias_dirs[k]; k++)
		fn(alias_dirs[k], arg);
}

int policy_rule_alias_id(const struct eg_policy *p, size_t i, size_t k, uint64_t *dev, uint64_t *ino)
{
	if (i >= p->n_rules || k >= p->rules[i].n_alias_ids)
		return -ERANGE;
	*dev = p->rules[i].alias_ids[k].dev;
	*ino = p->rules[i].alias_ids[k].ino;
	return 0;
}

bool eg_rule_has_alias(const struct eg_rule *r, uint64_t dev, uint64_t ino)
{
	uint32_t i;

	for (i = 0; i < r->n_alias_ids; i++)
		if (r->alias_ids[i].dev == dev && r->alias_ids[i].ino == ino)
			return true;
	return false;
}
