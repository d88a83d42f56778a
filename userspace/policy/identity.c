// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A rule that names a file by its literal path names that file, not the
 * string: at load the file's identity (device, inode) and content (size,
 * SHA-256) are taken, and an exec of the same file under another path (a
 * hard link, a bind mount) matches the rule as the path would; so does a
 * copy of it (another name, a memfd) when the rule denies. Content is
 * compared only for files whose size equals a denied file's, so most
 * execs cost one lookup.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "policy/internal.h"
#include "util/digest.h"
#include "util/fileid.h"

/* What path names now, in this (the daemon's) mount namespace; its content hashed if asked. */
static int key_load(struct eg_policy *p, const char *path, bool hash, struct eg_file_key *ret)
{
	struct stat st;
	int fd, rc;

	memset(ret, 0, sizeof(*ret));
	/* looked at before it is opened: a FIFO or a device is never opened for reading */
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fd = eg_open_regular(fd, &st);
	if (fd < 0)
		return fd;
	ret->id.dev = eg_kdev(st.st_dev);
	ret->id.ino = st.st_ino;
	ret->size = st.st_size;
	if (hash && (uint64_t)st.st_size <= EG_CONTENT_MAX && st.st_size > 0 &&
	    p->hashed_bytes + st.st_size <= EG_POLICY_MAX_HASHED) {
		rc = eg_hash_fd(fd, st.st_size, ret->sha256);
		if (!rc) {
			ret->hashed = true;
			p->hashed_bytes += st.st_size;
		}
	}
	close(fd);
	return 0;
}

int eg_identity_compile(struct eg_policy *p)
{
	uint32_t i, j;

	if (p->no_files)
		return 0;	/* its paths match by name */
	/*
	 * Content only denies: nothing pins what a copy holds between our
	 * hash and the kernel's open (a ticket names a file by device and
	 * inode), so a copy the task can write, allowed by its content, would
	 * be rewritten before it runs. Nor does the kernel's judge compare
	 * content.
	 */
	for (i = 0; i < p->n_rules; i++) {
		struct eg_rule *r = &p->rules[i];
		uint32_t n = 0;

		for (j = 0; j < r->paths.n; j++)
			n += r->paths.v[j][0] == '/' && eg_glob_is_literal(r->paths.v[j]);
		if (!n)
			continue;
		r->path_ids = calloc(n, sizeof(*r->path_ids));
		if (!r->path_ids)
			return -ENOMEM;
		for (j = 0; j < r->paths.n; j++) {
			if (r->paths.v[j][0] != '/' || !eg_glob_is_literal(r->paths.v[j]))
				continue;
			if (!key_load(p, r->paths.v[j], r->decision == EG_DECISION_DENY, &r->path_ids[r->n_path_ids]))
				r->n_path_ids++;
		}
		/* the array is final now: the tables borrow keys from it */
		for (j = 0; j < r->n_path_ids; j++) {
			struct eg_file_key *k = &r->path_ids[j];

			if (eg_htab_add_key(&p->by_ident, (const char *)&k->id, sizeof(k->id), i))
				return -ENOMEM;
			if (!k->hashed)
				continue;
			if (eg_htab_add_key(&p->by_content, (const char *)k->sha256, sizeof(k->sha256), i) ||
			    eg_htab_add_key(&p->by_size, (const char *)&k->size, sizeof(k->size), i))
				return -ENOMEM;
		}
	}
	return 0;
}

/* ---- the files a policy names, after its load ---------------------------------- */

static bool same_keys(const struct eg_file_key *a, uint32_t na, const struct eg_file_key *b, uint32_t nb)
{
	uint32_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (a[i].id.dev != b[i].id.dev || a[i].id.ino != b[i].id.ino || a[i].size != b[i].size ||
		    a[i].hashed != b[i].hashed || memcmp(a[i].sha256, b[i].sha256, sizeof(a[i].sha256)))
			return false;
	return true;
}

static bool same_rules(const struct eg_policy *a, const struct eg_policy *b)
{
	size_t i;

	if (!a || !b)
		return a == b;
	if (a->n_rules != b->n_rules)
		return false;
	for (i = 0; i < a->n_rules; i++) {
		const struct eg_rule *x = &a->rules[i], *y = &b->rules[i];

		if (!same_keys(x->path_ids, x->n_path_ids, y->path_ids, y->n_path_ids) ||
		    x->n_alias_ids != y->n_alias_ids ||
		    (x->n_alias_ids && memcmp(x->alias_ids, y->alias_ids, x->n_alias_ids * sizeof(*x->alias_ids))))
			return false;
	}
	return true;
}

/* every id of b's bypass in a's */
static bool bypass_covered(const struct eg_policy *a, const struct eg_policy *b)
{
	size_t i, j;

	for (j = 0; j < b->n_bypass_ids; j++) {
		for (i = 0; i < a->n_bypass_ids; i++)
			if (a->bypass_ids[i].dev == b->bypass_ids[j].dev && a->bypass_ids[i].ino == b->bypass_ids[j].ino)
				break;
		if (i == a->n_bypass_ids)
			return false;
	}
	return true;
}

bool policy_files_same(const struct eg_policy *a, const struct eg_policy *b)
{
	/* as sets: a learns ids as execs meet them, which the kernel never hears of but from a load */
	return same_rules(a, b) && same_rules(a->idents, b->idents) && bypass_covered(a, b) &&
	       bypass_covered(b, a);
}

/* The directory a literal absolute path (or a glob's literal head) is in, to fn. */
static void dir_of(const char *path, void (*fn)(const char *dir, void *arg), void *arg)
{
	char dir[PATH_MAX];
	size_t n = strcspn(path, "*?[");
	const char *slash;

	if (path[0] != '/' || n >= sizeof(dir))
		return;
	memcpy(dir, path, n);
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	dir[slash == dir ? 1 : slash - dir] = '\0';
	/* one not there yet: the nearest that is (its child made is a change there) */
	while (strcmp(dir, "/") && access(dir, F_OK)) {
		slash = strrchr(dir, '/');
		dir[slash == dir ? 1 : slash - dir] = '\0';
	}
	fn(dir, arg);
}

/* dir_of() the path, and of the file it leads to through links (a package's file is often there) */
static void dirs_of(const char *path, void (*fn)(const char *dir, void *arg), void *arg)
{
	char real[PATH_MAX];

	dir_of(path, fn, arg);
	if (realpath(path, real) && strcmp(real, path))
		dir_of(real, fn, arg);
}

struct alias_walk {
	const char *name;
	void (*fn)(const char *dir, void *arg);
	void *arg;
};

static void alias_real_dir(const char *dir, void *arg)
{
	const struct alias_walk *w = arg;
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, w->name) < sizeof(path))
		dirs_of(path, w->fn, w->arg);
}

static void rules_dirs(const struct eg_policy *p, void (*fn)(const char *dir, void *arg), void *arg)
{
	size_t i, j;

	for (i = 0; p && i < p->n_rules; i++) {
		const struct eg_rule *r = &p->rules[i];

		for (j = 0; j < r->paths.n; j++)
			if (eg_glob_is_literal(r->paths.v[j]))
				dirs_of(r->paths.v[j], fn, arg);
		if (r->decision != EG_DECISION_ALLOW || !r->basenames.n)
			continue;
		eg_alias_dirs(fn, arg);
		/* where each name leads from there (clang-15 to /usr/lib/llvm-15/bin) */
		for (j = 0; j < r->basenames.n; j++) {
			struct alias_walk w = { r->basenames.v[j], fn, arg };

			if (!strpbrk(r->basenames.v[j], "*?[/"))
				eg_alias_dirs(alias_real_dir, &w);
		}
	}
}

void policy_file_dirs(const struct eg_policy *p, void (*fn)(const char *dir, void *arg), void *arg)
{
	size_t i;

	if (!p || p->no_files)
		return;
	rules_dirs(p, fn, arg);
	rules_dirs(p->idents, fn, arg);
	for (i = 0; i < p->bypass.n; i++) {
		if (strchr(p->bypass.v[i], '/'))
			dir_of(p->bypass.v[i], fn, arg);
		else
			eg_bypass_dirs(fn, arg);
	}
}
