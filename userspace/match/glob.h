/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Globs on paths and cgroups, and the index key each gives: shared by the
 * policy's evaluator (policy/) and the kernel rule compiler (enforce/), so
 * that both index a rule the same way. No state, no allocation.
 */
#ifndef EG_GLOB_H
#define EG_GLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What fnmatch must find at the ends of a name: the literal bytes before
 * the first and after the last metacharacter, checked with memcmp before
 * fnmatch (which is slow) gets to say no.
 */
struct eg_glob {
	uint16_t len;
	uint16_t pre;
	uint16_t suf;
	bool literal;			/* no metacharacter: equality */
};

#define EG_SUFFIX_KEY_MAX 64		/* suffix keys: the last bytes of a literal suffix */

bool eg_glob_is_literal(const char *g);
enum eg_key_kind { EG_KEY_NONE, EG_KEY_BASENAME, EG_KEY_DIR, EG_KEY_SUFFIX };
/* What a path glob requires of a filename: its basename, a directory prefix, or a tail. */
enum eg_key_kind eg_glob_key(const char *g, const char **ret_key, size_t *ret_len);
void eg_glob_info(const char *g, struct eg_glob *ret);
/* fnmatch(g, s, 0) == 0, with the literal ends checked first. */
bool eg_glob_match(const char *g, const struct eg_glob *gi, const char *s, size_t slen);
/* cg is top or below it (cgroup v2 paths, component boundaries). */
bool eg_cgroup_under(const char *cg, const char *top);

#endif
