// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Values the policy's sections share: a decision, one of two words, a
 * duration ("1m30s"), lists of strings with their places, the settings'
 * defaults. The loader's parts (load.c, load_rules.c, load_sandbox.c)
 * call down into this file.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "policy/loader.h"
#include "util/severity.h"

int eg_parse_duration_ms(const char *s, uint64_t *ret_ms)
{
	double total = 0;
	bool any = false;

	if (!*s)
		return -EINVAL;
	while (*s) {
		double v, unit;
		char *end;

		/* Digits and one '.', nothing strtod would add (signs, exponents, hex). */
		end = (char *)s;
		while (isdigit((unsigned char)*end) || *end == '.')
			end++;
		if (end == s || memchr(s, '.', end - s) != memrchr(s, '.', end - s))
			return -EINVAL;
		errno = 0;
		v = strtod(s, NULL);
		if (errno || !isfinite(v))
			return -EINVAL;
		s = end;
		if (!*s && !any) {
			unit = 1000;		/* a bare number: seconds */
		} else if (!strncmp(s, "ms", 2)) {
			unit = 1;
			s += 2;
		} else if (*s == 's') {
			unit = 1000;
			s++;
		} else if (*s == 'm') {
			unit = 60 * 1000;
			s++;
		} else if (*s == 'h') {
			unit = 3600 * 1000;
			s++;
		} else {
			return -EINVAL;
		}
		total += v * unit;
		if (total > 1e15)
			return -ERANGE;
		any = true;
	}
	*ret_ms = (uint64_t)llround(total);
	return 0;
}

int load_decision(struct loader *l, const char *what, unsigned int allowed, enum eg_decision *out)
{
	/* by enum eg_decision: "error" is never allowed */
	static const char *const names[] = { "allow", "deny", "approval", "audit", "error", "redirect", NULL };
	const char *choices[7];
	char list[96], want[112];
	enum eg_decision d;
	size_t n = 0, off = 0, i;
	const char *hint;

	if (yr_is_scalar(&l->y) && !eg_decision_parse(yr_sval(&l->y), &d) && (allowed & (1u << d))) {
		*out = d;
		return 0;
	}
	/* The error path: say which words would do. */
	for (i = 0; names[i]; i++) {
		if (allowed & (1u << i))
			choices[n++] = names[i];
	}
	choices[n] = NULL;
	list[0] = '\0';
	for (i = 0; i < n; i++)
		off += snprintf(list + off, sizeof(list) - off, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
				choices[i]);
	if (!yr_is_scalar(&l->y) || yr_is_null(&l->y)) {
		snprintf(want, sizeof(want), "one of %s", list);
		return yr_wrong_type(&l->y, what, want);
	}
	hint = yr_suggest(yr_sval(&l->y), choices);
	if (hint)
		yr_err(&l->y, yr_ev_pos(&l->y), "'%s' must be %s, got '%.64s'; did you mean '%s'?", what, list, yr_sval(&l->y), hint);
	else
		yr_err(&l->y, yr_ev_pos(&l->y), "'%s' must be %s, got '%.64s'", what, list, yr_sval(&l->y));
	return 0;
}

/* One of two words: *ret = false for `no`, true for `yes`. */
int load_word(struct loader *l, const char *what, const char *no, const char *yes, bool *ret)
{
	if (!yr_is_scalar(&l->y) || yr_is_null(&l->y))
		return yr_wrong_type(&l->y, what, yes);
	if (!strcmp(yr_sval(&l->y), no)) {
		*ret = false;
	} else if (!strcmp(yr_sval(&l->y), yes)) {
		*ret = true;
	} else {
		yr_err(&l->y, yr_ev_pos(&l->y), "'%s' is %s or %s, got '%.64s'", what, no, yes, yr_sval(&l->y));
	}
	return 0;
}

int load_strv_push(struct loader *l, struct eg_strv *sv, char *s, struct eg_pos pos)
{
	if (yr_count_item(&l->y, pos)) {
		free(s);
		return -EINVAL;
	}
	/* Growth by doubling: n is a power of two exactly when the arrays are full. */
	if (!(sv->n & (sv->n - 1))) {
		size_t cap = sv->n ? (size_t)sv->n * 2 : 1;
		char **v = realloc(sv->v, cap * sizeof(*v));
		struct eg_pos *p;

		if (!v)
			goto fail;
		sv->v = v;
		p = realloc(sv->pos, cap * sizeof(*p));
		if (!p)
			goto fail;
		sv->pos = p;
	}
	sv->v[sv->n] = s;
	sv->pos[sv->n] = pos;
	sv->n++;
	return 0;
fail:
	free(s);
	yr_oom(&l->y);
	return -ENOMEM;
}

int load_strv_item(struct yreader *y, const char *what, void *ctx)
{
	struct loader *l = LOADER(y);
	struct eg_pos pos = yr_ev_pos(&l->y);
	char *s = yr_get_string(&l->y, what, false);

	if (!s)
		return l->y.fatal ? -EINVAL : 0;
	return load_strv_push(l, ctx, s, pos);
}

void load_settings_defaults(struct eg_policy_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->execve_enabled = false;
	s->max_argc = 1000;
	s->max_argv_bytes = 65536;
	s->on_truncated = EG_DECISION_DENY;
	s->approval_timeout_ms = 10000;
	s->approval_timeout_set = false;
	s->approval_timeout_action = EG_TIMEOUT_DENY;
	s->default_decision = EG_DECISION_ALLOW;
	s->on_error = EG_DECISION_DENY;
}
