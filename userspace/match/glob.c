// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fnmatch globs on paths (no FNM_PATHNAME: '*' crosses '/'), with their
 * literal ends checked first; the key a glob gives an index (what any path
 * it matches must have: a basename, a directory prefix, a tail), which the
 * policy's evaluator and the kernel rule compiler both index by; cgroup
 * paths under a cgroup or a glob.
 */
#include <fnmatch.h>
#include <string.h>
#include "match/glob.h"

static bool is_glob_meta(char c)
{
	return c == '*' || c == '?' || c == '[' || c == ']' || c == '\\';
}

bool eg_glob_is_literal(const char *g)
{
	for (; *g; g++)
		if (*g == '*' || *g == '?' || *g == '[' || *g == '\\')
			return false;
	return true;
}

void eg_glob_info(const char *g, struct eg_glob *ret)
{
	size_t len = strlen(g), pre, suf;

	for (pre = 0; pre < len && !is_glob_meta(g[pre]); pre++)
		;
	for (suf = 0; suf < len - pre && !is_glob_meta(g[len - 1 - suf]); suf++)
		;
	ret->len = (uint16_t)len;
	ret->literal = eg_glob_is_literal(g);
	ret->pre = (uint16_t)(ret->literal ? len : pre);
	ret->suf = (uint16_t)(ret->literal ? 0 : suf);
}

bool eg_glob_match(const char *g, const struct eg_glob *gi, const char *s, size_t slen)
{
	if (gi->literal)
		return gi->len == slen && !memcmp(g, s, slen);
	/* The literal ends match distinct bytes of s: s holds both, apart. */
	if (slen < (size_t)gi->pre + gi->suf || memcmp(g, s, gi->pre) ||
	    memcmp(g + gi->len - gi->suf, s + slen - gi->suf, gi->suf))
		return false;
	return !fnmatch(g, s, 0);
}

/*
 * What a path glob tells about the filenames it can match: the basename
 * when the glob ends in a literal component (with no FNM_PATHNAME a '*'
 * crosses '/', but the text after the last '/' must still end the name),
 * else the literal directory it starts with, else its literal tail.
 */
enum eg_key_kind eg_glob_key(const char *g, const char **ret_key, size_t *ret_len)
{
	const char *slash = strrchr(g, '/'), *c;
	size_t lit;

	if (eg_glob_is_literal(g)) {
		*ret_key = slash ? slash + 1 : g;
		*ret_len = strlen(*ret_key);
		return EG_KEY_BASENAME;
	}
	if (slash) {
		/* No ']' after the last '/' either: so that '/' is not inside a bracket. */
		for (c = slash + 1; *c && !is_glob_meta(*c); c++)
			;
		if (!*c) {
			*ret_key = slash + 1;
			*ret_len = strlen(slash + 1);
			return EG_KEY_BASENAME;
		}
	}
	for (lit = 0; g[lit] && !is_glob_meta(g[lit]); lit++)
		;
	while (lit && g[lit - 1] != '/')
		lit--;
	if (lit) {
		*ret_key = g;
		*ret_len = lit;
		return EG_KEY_DIR;
	}
	{
		size_t len = strlen(g), suf;

		for (suf = 0; suf < len && !is_glob_meta(g[len - 1 - suf]); suf++)
			;
		if (!suf)
			return EG_KEY_NONE;
		if (suf > EG_SUFFIX_KEY_MAX)
			suf = EG_SUFFIX_KEY_MAX;
		*ret_key = g + len - suf;
		*ret_len = suf;
		return EG_KEY_SUFFIX;
	}
}

/* cg is top or below it (cgroup v2 paths, component boundaries); top may be a glob. */
bool eg_cgroup_under(const char *cg, const char *top)
{
	size_t n = strlen(top), i;
	char anc[4096];

	if (!eg_glob_is_literal(top)) {
		/* a glob names the cgroups it matches and everything below them */
		if (!fnmatch(top, cg, 0))
			return true;
		for (i = 1; cg[i] && i < sizeof(anc); i++) {
			if (cg[i] != '/')
				continue;
			memcpy(anc, cg, i);
			anc[i] = '\0';
			if (!fnmatch(top, anc, 0))
				return true;
		}
		return false;
	}
	if (n == 1 && top[0] == '/')
		return cg[0] == '/';
	return !strncmp(cg, top, n) && (cg[n] == '\0' || cg[n] == '/');
}
