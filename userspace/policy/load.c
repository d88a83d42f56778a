// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * YAML -> compiled policy. libyaml's event API, pulled one event at a time
 * against the fixed schema in policy/README.md: no document tree is built,
 * aliases are refused (no "billion laughs"), nesting is capped, so memory
 * follows the rules and not the shape of the input. Errors do not stop the
 * walk (the user sees them all at once), except those after which libyaml
 * cannot go on.
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
#include <yaml.h>
#include "policy/internal.h"
#include "util/severity.h"

struct loader {
	yaml_parser_t yp;
	yaml_event_t ev;
	bool have_ev;
	bool fatal;			/* libyaml or a limit gave up: stop reading */
	bool oom;
	int depth;			/* collections open around the current event */
	const char *buf;
	size_t len;
	const char *file;
	struct eg_diags *diags;
	unsigned int nerr;
	struct eg_policy *p;
	struct eg_htab names;		/* rule name -> index, for duplicates */
	struct eg_policy *top;		/* the policy (l->p is its identities' while they are read) */
	uint32_t n_items;		/* list items so far */
};

/* Keys per mapping; enum values index these tables. */
enum { ROOT_SANDBOX, ROOT_COMMANDS, ROOT_DEFAULT_DECISION, ROOT_UNKNOWN_DEPTH, ROOT_KERNEL_APPROVAL,
       ROOT_CONTEXTS, ROOT_FILESYSTEM, ROOT_NETWORK, ROOT_ENVIRONMENT, ROOT_ON_UNSUPPORTED };
static const char *const root_keys[] = { "sandbox", "commands", "default_decision", "unknown_depth",
					 "kernel_approval", "contexts", "filesystem", "network", "environment",
					 "on_unsupported", NULL };

/* The session's boundary: filesystem:, network:, environment: */
enum { FS_READ, FS_WRITE, FS_EXECUTE };
static const char *const filesystem_keys[] = { "read", "write", "execute", NULL };
enum { NET_CONNECT_TCP, NET_BIND_TCP };
static const char *const network_keys[] = { "connect_tcp", "bind_tcp", NULL };
enum { ENV_DENY };
static const char *const environment_keys[] = { "deny", NULL };

enum { SANDBOX_SECCOMP };
static const char *const sandbox_keys[] = { "seccomp", NULL };

enum { SECCOMP_ENABLED, SECCOMP_UNIX_SOCKET, SECCOMP_EXECVE };
static const char *const seccomp_keys[] = { "enabled", "unix_socket", "execve", NULL };

enum { UNIX_ENABLED };
static const char *const unix_socket_keys[] = { "enabled", NULL };

enum { EX_ENABLED, EX_MAX_ARGC, EX_MAX_ARGV_BYTES, EX_ON_TRUNCATED, EX_APPROVAL_TIMEOUT,
       EX_APPROVAL_TIMEOUT_ACTION, EX_INTERNAL_BYPASS, EX_ON_ERROR };
static const char *const execve_keys[] = {
	"enabled", "max_argc", "max_argv_bytes", "on_truncated", "approval_timeout",
	"approval_timeout_action", "internal_bypass", "on_error", NULL
};

enum { R_NAME, R_BASENAMES, R_PATHS, R_ARGS_PATTERNS, R_ARGS, R_CONTEXT, R_CGROUPS, R_UIDS,
       R_DECISION, R_MESSAGE, R_SEVERITY, R_TAGS, R_CONTEXTS };
static const char *const rule_keys[] = {
	"name", "basenames", "paths", "args_patterns", "args", "context", "cgroups", "uids",
	"decision", "message", "severity", "tags", "contexts", NULL
};

/* What an identity matches on: the program, its arguments, who runs it. */
#define IDENT_KEYS ((1u << R_BASENAMES) | (1u << R_PATHS) | (1u << R_ARGS) | (1u << R_UIDS))

enum { AC_NAME, AC_IDENTITIES, AC_LIMITS };
static const char *const actx_keys[] = { "name", "identities", "limits", NULL };

enum { LIM_MAX_DEPTH, LIM_MAX_SHELLS };
static const char *const limit_keys[] = { "max_depth", "max_consecutive_shells", NULL };

enum { CTX_MIN_DEPTH, CTX_MAX_DEPTH };
static const char *const context_keys[] = { "min_depth", "max_depth", NULL };

/* Where each mapping lives, to say "'x' belongs under ..." for a misplaced key. */
static const struct {
	const char *where;
	const char *const *keys;
} all_maps[] = {
	{ "the top level", root_keys },
	{ "sandbox", sandbox_keys },
	{ "sandbox.seccomp", seccomp_keys },
	{ "sandbox.seccomp.unix_socket", unix_socket_keys },
	{ "sandbox.seccomp.execve", execve_keys },
	{ "a rule (an item of commands)", rule_keys },
	{ "a rule's context mapping", context_keys },
	{ "a context (an item of contexts)", actx_keys },
	{ "a context's limits", limit_keys },
	{ "filesystem", filesystem_keys },
	{ "network", network_keys },
	{ "environment", environment_keys },
};

static void err(struct loader *l, struct eg_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void err(struct loader *l, struct eg_pos pos, const char *fmt, ...)
{
	va_list ap;

	l->nerr++;
	va_start(ap, fmt);
	eg_diag_vadd(l->diags, l->file, pos, false, fmt, ap);
	va_end(ap);
}

static void oom(struct loader *l)
{
	if (!l->oom)
		err(l, (struct eg_pos){}, "out of memory");
	l->oom = true;
	l->fatal = true;
}

static struct eg_pos ev_pos(const struct loader *l)
{
	return (struct eg_pos){ (int)l->ev.start_mark.line + 1, (int)l->ev.start_mark.column + 1 };
}

/* Optimal string alignment distance: a transposition counts as one edit. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t row[3][64];
	size_t *pp = row[0], *pv = row[1], *cu = row[2];

	if (la >= 63 || lb >= 63)
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		pv[j] = j;
	for (i = 1; i <= la; i++) {
		cu[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			size_t v = pv[j] + 1;

			if (cu[j - 1] + 1 < v)
				v = cu[j - 1] + 1;
			if (pv[j - 1] + cost < v)
				v = pv[j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    pp[j - 2] + 1 < v)
				v = pp[j - 2] + 1;
			cu[j] = v;
		}
		{
			size_t *t = pp;

			pp = pv;
			pv = cu;
			cu = t;
		}
	}
	return pv[lb];
}

/* The closest word of a NULL-terminated list, if close enough to be a typo. */
static const char *suggest(const char *word, const char *const *words)
{
	size_t best = (size_t)-1, len = strlen(word), limit;
	const char *pick = NULL;

	limit = len < 4 ? 1 : len < 9 ? 2 : 3;
	for (; *words; words++) {
		size_t d = edit_distance(word, *words);

		if (d < best) {
			best = d;
			pick = *words;
		}
	}
	return best <= limit ? pick : NULL;
}

static void parser_error(struct loader *l)
{
	yaml_parser_t *y = &l->yp;
	struct eg_pos pos = {};
	size_t i, off;

	l->fatal = true;
	switch (y->error) {
	case YAML_MEMORY_ERROR:
		oom(l);
		return;
	case YAML_READER_ERROR:
		/* Reader errors carry a byte offset, not a mark. */
		off = y->problem_offset < l->len ? y->problem_offset : l->len;
		/* A bad trailing byte: point at the sequence it was meant to continue. */
		for (i = 0; i < 3 && off > 0 && off < l->len && ((unsigned char)l->buf[off] & 0xc0) != 0xc0 &&
			    (unsigned char)l->buf[off - 1] >= 0x80; i++)
			off--;
		pos.line = 1;
		pos.col = 1;
		for (i = 0; i < off; i++) {
			if (l->buf[i] == '\n') {
				pos.line++;
				pos.col = 1;
			} else if (((unsigned char)l->buf[i] & 0xc0) != 0x80) {
				pos.col++;
			}
		}
		if (y->problem_value >= 0)
			err(l, pos, "not a YAML text: %s (byte 0x%02x)", y->problem,
			    (unsigned int)y->problem_value & 0xff);
		else
			err(l, pos, "not a YAML text: %s", y->problem);
		return;
	default:
		pos.line = (int)y->problem_mark.line + 1;
		pos.col = (int)y->problem_mark.column + 1;
		if (y->context)
			err(l, pos, "YAML syntax: %s (%s that starts at line %d, column %d)",
			    y->problem ? y->problem : "error", y->context,
			    (int)y->context_mark.line + 1, (int)y->context_mark.column + 1);
		else
			err(l, pos, "YAML syntax: %s", y->problem ? y->problem : "error");
		return;
	}
}

static int next(struct loader *l)
{
	if (l->have_ev) {
		yaml_event_delete(&l->ev);
		l->have_ev = false;
	}
	if (l->fatal)
		return -EINVAL;
	if (!yaml_parser_parse(&l->yp, &l->ev)) {
		parser_error(l);
		return -EINVAL;
	}
	l->have_ev = true;
	switch (l->ev.type) {
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (++l->depth > EG_POLICY_MAX_NEST) {
			err(l, ev_pos(l), "YAML nested deeper than %d levels; a policy needs about 5",
			    EG_POLICY_MAX_NEST);
			l->fatal = true;
			return -EINVAL;
		}
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		l->depth--;
		break;
	case YAML_ALIAS_EVENT:
		err(l, ev_pos(l), "YAML aliases (*%s) are not supported in a policy; write the value out",
		    (const char *)l->ev.data.alias.anchor);
		l->fatal = true;
		return -EINVAL;
	default:
		break;
	}
	return 0;
}

/* Consumes the node whose first event is current. */
static int skip(struct loader *l)
{
	int target;

	if (l->ev.type != YAML_SEQUENCE_START_EVENT && l->ev.type != YAML_MAPPING_START_EVENT)
		return 0;
	target = l->depth - 1;
	while (l->depth > target)
		if (next(l))
			return -EINVAL;
	return 0;
}

static bool is_scalar(const struct loader *l)
{
	return l->ev.type == YAML_SCALAR_EVENT;
}

static const char *sval(const struct loader *l)
{
	return (const char *)l->ev.data.scalar.value;
}

static size_t slen(const struct loader *l)
{
	return l->ev.data.scalar.length;
}

static bool plain(const struct loader *l)
{
	return l->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !l->ev.data.scalar.tag;
}

static bool is_null(const struct loader *l)
{
	const char *v = sval(l);

	return is_scalar(l) && plain(l) &&
	       (!*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL"));
}

static const char *kind(const struct loader *l)
{
	switch (l->ev.type) {
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SCALAR_EVENT:
		if (is_null(l))
			return "no value";
		return plain(l) ? "a scalar" : "a quoted string";
	default:
		return "something else";
	}
}

/* Type error at the current node, which is then skipped. */
static int wrong_type(struct loader *l, const char *what, const char *want)
{
	if (is_scalar(l) && !is_null(l))
		err(l, ev_pos(l), "'%s' must be %s, got '%.64s'", what, want, sval(l));
	else
		err(l, ev_pos(l), "'%s' must be %s, got %s", what, want, kind(l));
	return skip(l);
}

/* A mapping being walked: its keys, the ones seen and where. */
struct map_iter {
	const char *const *keys;
	const char *where;
	uint32_t seen;
	struct eg_pos first[16];
	struct eg_pos pos;		/* of the mapping itself */
	struct eg_pos key_pos;		/* of the current key */
};

static void unknown_key(struct loader *l, struct map_iter *it, const char *key)
{
	const char *hint = suggest(key, it->keys);
	size_t m, k;

	if (hint) {
		err(l, it->key_pos, "unknown key '%s' %s; did you mean '%s'?", key, it->where, hint);
		return;
	}
	for (m = 0; m < sizeof(all_maps) / sizeof(all_maps[0]); m++) {
		for (k = 0; all_maps[m].keys[k]; k++) {
			if (!strcmp(all_maps[m].keys[k], key)) {
				err(l, it->key_pos, "'%s' does not belong %s; it goes in %s", key,
				    it->where, all_maps[m].where);
				return;
			}
		}
	}
	{
		char list[256];
		size_t off = 0;

		list[0] = '\0';
		for (k = 0; it->keys[k] && off < sizeof(list); k++)
			off += snprintf(list + off, sizeof(list) - off, "%s%s", k ? ", " : "", it->keys[k]);
		err(l, it->key_pos, "unknown key '%.64s' %s (known keys: %s)", key, it->where, list);
	}
}

/*
 * Steps to the next key of the mapping: returns its index with the value's
 * first event current, or -1 at the end of the mapping, or -2 when reading
 * must stop. Unknown, duplicate and non-string keys are reported and skipped.
 */
static int map_next(struct loader *l, struct map_iter *it)
{
	for (;;) {
		char key[128];
		size_t k;
		int i;

		if (next(l))
			return -2;
		if (l->ev.type == YAML_MAPPING_END_EVENT)
			return -1;
		it->key_pos = ev_pos(l);
		if (!is_scalar(l)) {
			err(l, it->key_pos, "keys %s must be plain words, got %s", it->where, kind(l));
			if (skip(l) || next(l) || skip(l))
				return -2;
			continue;
		}
		k = slen(l) < sizeof(key) - 1 ? slen(l) : sizeof(key) - 1;
		memcpy(key, sval(l), k);
		key[k] = '\0';
		for (i = 0; it->keys[i]; i++)
			if (!strcmp(it->keys[i], key) && slen(l) == strlen(key))
				break;
		if (!it->keys[i]) {
			unknown_key(l, it, key);
		} else if (it->seen & (1u << i)) {
			err(l, it->key_pos, "duplicate key '%s' %s (first at line %d)", key, it->where,
			    it->first[i].line);
		} else {
			it->seen |= 1u << i;
			it->first[i] = it->key_pos;
			if (next(l))
				return -2;
			return i;
		}
		if (next(l) || skip(l))
			return -2;
	}
}

static void map_begin(struct loader *l, struct map_iter *it, const char *const *keys, const char *where)
{
	memset(it, 0, sizeof(*it));
	it->keys = keys;
	it->where = where;
	it->pos = ev_pos(l);
}

/* A copy of the current scalar as a string for `what`; NULL after an error. */
static char *get_string(struct loader *l, const char *what, bool allow_empty)
{
	char *s;

	if (!is_scalar(l) || is_null(l)) {
		wrong_type(l, what, "a string");
		return NULL;
	}
	if (memchr(sval(l), '\0', slen(l))) {
		err(l, ev_pos(l), "'%s' contains a NUL byte", what);
		return NULL;
	}
	if (!allow_empty && !slen(l)) {
		err(l, ev_pos(l), "'%s' is an empty string", what);
		return NULL;
	}
	if (slen(l) > EG_POLICY_MAX_PATTERN) {
		err(l, ev_pos(l), "'%s' is longer than %u bytes", what, EG_POLICY_MAX_PATTERN);
		return NULL;
	}
	s = strdup(sval(l));
	if (!s)
		oom(l);
	return s;
}

static int get_bool(struct loader *l, const char *what, bool *out)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF" };
	size_t i;

	if (!is_scalar(l) || !plain(l))
		return wrong_type(l, what, "true or false");
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(sval(l), yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcmp(sval(l), no[i])) {
			*out = false;
			return 0;
		}
	}
	err(l, ev_pos(l), "'%s' must be true or false, got '%.64s'", what, sval(l));
	return 0;
}

/* Returns 0 and sets *out, or 1 after reporting an error; -EINVAL if reading must stop. */
static int get_int(struct loader *l, const char *what, long long min, long long max, long long *out)
{
	const char *s;
	char *end;
	long long v;

	if (!is_scalar(l) || !plain(l) || is_null(l)) {
		err(l, ev_pos(l), "'%s' must be an integer, got %s", what, kind(l));
		return skip(l) ? -EINVAL : 1;
	}
	s = sval(l);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (!isdigit((unsigned char)s[s[0] == '-' || s[0] == '+']) || *end || errno || v < min || v > max) {
		err(l, ev_pos(l), "'%s' must be an integer from %lld to %lld, got '%.64s'", what, min, max, s);
		return 1;
	}
	*out = v;
	return 0;
}

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

static int get_decision(struct loader *l, const char *what, unsigned int allowed, enum eg_decision *out)
{
	static const char *const names[] = { "allow", "deny", "approval", "audit", NULL };
	const char *choices[5];
	char list[64], want[80];
	enum eg_decision d;
	size_t n = 0, off = 0, i;
	const char *hint;

	if (is_scalar(l) && !eg_decision_parse(sval(l), &d) && (allowed & (1u << d))) {
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
	if (!is_scalar(l) || is_null(l)) {
		snprintf(want, sizeof(want), "one of %s", list);
		return wrong_type(l, what, want);
	}
	hint = suggest(sval(l), choices);
	if (hint)
		err(l, ev_pos(l), "'%s' must be %s, got '%.64s'; did you mean '%s'?", what, list, sval(l), hint);
	else
		err(l, ev_pos(l), "'%s' must be %s, got '%.64s'", what, list, sval(l));
	return 0;
}

#define ALL_DECISIONS 0xfu

/* "[a,a,a,...]": 2 bytes of YAML, 50 of memory each. */
/* One of two words: *ret = false for `no`, true for `yes`. */
static int get_word(struct loader *l, const char *what, const char *no, const char *yes, bool *ret)
{
	if (!is_scalar(l) || is_null(l))
		return wrong_type(l, what, yes);
	if (!strcmp(sval(l), no)) {
		*ret = false;
	} else if (!strcmp(sval(l), yes)) {
		*ret = true;
	} else {
		err(l, ev_pos(l), "'%s' is %s or %s, got '%.64s'", what, no, yes, sval(l));
	}
	return 0;
}

static int count_item(struct loader *l, struct eg_pos pos)
{
	if (++l->n_items <= EG_POLICY_MAX_ITEMS)
		return 0;
	err(l, pos, "more than %u list items in one policy", EG_POLICY_MAX_ITEMS);
	l->fatal = true;
	return -EINVAL;
}

static int strv_push(struct loader *l, struct eg_strv *sv, char *s, struct eg_pos pos)
{
	if (count_item(l, pos)) {
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
	oom(l);
	return -ENOMEM;
}

/* Calls item() for each element of a list of scalars at the current event. */
static int each_item(struct loader *l, const char *what, const char *want,
		     int (*item)(struct loader *l, const char *what, void *ctx), void *ctx)
{
	struct eg_pos pos = ev_pos(l);
	size_t n = 0;

	if (l->ev.type != YAML_SEQUENCE_START_EVENT)
		return wrong_type(l, what, want);
	for (;;) {
		if (next(l))
			return -EINVAL;
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		n++;
		if (!is_scalar(l) || is_null(l)) {
			err(l, ev_pos(l), "items of '%s' must be strings, got %s", what, kind(l));
			if (skip(l))
				return -EINVAL;
			continue;
		}
		if (item(l, what, ctx))
			return -EINVAL;
	}
	if (!n)
		err(l, pos, "'%s' is an empty list; remove the key or list something", what);
	return 0;
}

static int strv_item(struct loader *l, const char *what, void *ctx)
{
	struct eg_pos pos = ev_pos(l);
	char *s = get_string(l, what, false);

	if (!s)
		return l->fatal ? -EINVAL : 0;
	return strv_push(l, ctx, s, pos);
}

static int cgroup_item(struct loader *l, const char *what, void *ctx)
{
	struct eg_pos pos = ev_pos(l);
	char *s = get_string(l, what, false);
	size_t n;

	if (!s)
		return l->fatal ? -EINVAL : 0;
	if (s[0] != '/') {
		err(l, pos, "cgroup '%.64s' must be a path from the cgroup v2 root, starting with '/'", s);
		free(s);
		return 0;
	}
	/* "/a/b/" and "/a/b" name the same cgroup; the root stays "/". */
	n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	return strv_push(l, ctx, s, pos);
}

struct regex_list {
	struct eg_regex **v;
	uint32_t *n;
	bool whole;			/* args: anchored at both ends */
};

static int regex_item(struct loader *l, const char *what, void *ctx)
{
	struct regex_list *rl = ctx;
	struct eg_pos pos = ev_pos(l);
	uint32_t opts = PCRE2_NEVER_UTF | PCRE2_NEVER_BACKSLASH_C;
	struct eg_regex *re;
	PCRE2_SIZE erroff;
	pcre2_code *code;
	int errcode;
	char *s;

	if (l->p->n_regexes >= EG_POLICY_MAX_REGEXES) {
		err(l, pos, "more than %u regular expressions in one policy", EG_POLICY_MAX_REGEXES);
		l->fatal = true;
		return -EINVAL;
	}
	s = get_string(l, what, false);
	if (!s)
		return l->fatal ? -EINVAL : 0;
	if (rl->whole)
		opts |= PCRE2_ANCHORED | PCRE2_ENDANCHORED;
	code = pcre2_compile((PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, opts, &errcode, &erroff, NULL);
	if (!code) {
		PCRE2_UCHAR msg[256];

		if (errcode == PCRE2_ERROR_NOMEMORY) {
			free(s);
			oom(l);
			return -ENOMEM;
		}
		pcre2_get_error_message(errcode, msg, sizeof(msg));
		err(l, pos, "bad regular expression '%.128s' in '%s': %s at offset %zu", s, what,
		    (const char *)msg, (size_t)erroff);
		free(s);
		return 0;
	}
	/* JIT where it works; the interpreter gives the same answers, slower. */
	if (l->p->n_regexes < EG_POLICY_MAX_JIT)
		pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
	l->p->n_regexes++;
	/* A short pattern can compile to 64 KiB ("(a|b){1000}"): bound the sum. */
	{
		size_t code_size = 0, jit_size = 0;

		pcre2_pattern_info(code, PCRE2_INFO_SIZE, &code_size);
		pcre2_pattern_info(code, PCRE2_INFO_JITSIZE, &jit_size);
		l->p->regex_mem += code_size + jit_size;
	}
	if (l->p->regex_mem > EG_POLICY_MAX_REGEX_MEM) {
		err(l, pos, "the regular expressions need more than %u MiB compiled; simplify them "
		    "(this one, '%.64s', is one of many or a large one)", EG_POLICY_MAX_REGEX_MEM >> 20, s);
		pcre2_code_free(code);
		free(s);
		l->fatal = true;
		return -EINVAL;
	}
	if (!(*rl->n & (*rl->n - 1))) {
		size_t cap = *rl->n ? (size_t)*rl->n * 2 : 1;

		re = realloc(*rl->v, cap * sizeof(*re));
		if (!re) {
			pcre2_code_free(code);
			free(s);
			oom(l);
			return -ENOMEM;
		}
		*rl->v = re;
	}
	re = &(*rl->v)[(*rl->n)++];
	re->code = code;
	re->src = s;
	re->pos = pos;
	return 0;
}

struct ctx_words {
	bool direct, nested;
};

static int context_item(struct loader *l, const char *what, void *ctx)
{
	static const char *const words[] = { "direct", "nested", NULL };
	struct ctx_words *w = ctx;

	(void)what;
	if (!strcmp(sval(l), "direct"))
		w->direct = true;
	else if (!strcmp(sval(l), "nested"))
		w->nested = true;
	else if (suggest(sval(l), words))
		err(l, ev_pos(l), "context must list 'direct' and/or 'nested', got '%.64s'; did you mean '%s'?",
		    sval(l), suggest(sval(l), words));
	else
		err(l, ev_pos(l), "context must list 'direct' and/or 'nested', got '%.64s'", sval(l));
	return 0;
}

static int parse_context(struct loader *l, struct eg_rule *r)
{
	struct map_iter it;
	long long v;
	int k, rc;

	r->has_context = true;
	if (l->ev.type == YAML_SEQUENCE_START_EVENT) {
		struct ctx_words w = {};

		if (each_item(l, "context", NULL, context_item, &w))
			return -EINVAL;
		r->min_depth = w.direct ? 0 : 1;
		r->max_depth = w.nested ? EG_DEPTH_INF : 0;
		return 0;
	}
	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "context", "[direct], [nested], [direct, nested] or {min_depth: N, max_depth: M}");
	map_begin(l, &it, context_keys, "in a rule's context mapping");
	while ((k = map_next(l, &it)) >= 0) {
		rc = get_int(l, context_keys[k], 0, EG_DEPTH_INF - 1, &v);
		if (rc < 0)
			return -EINVAL;
		if (rc)
			continue;
		if (k == CTX_MIN_DEPTH)
			r->min_depth = (int32_t)v;
		else
			r->max_depth = (int32_t)v;
	}
	if (k == -2)
		return -EINVAL;
	if (!it.seen)
		err(l, it.pos, "context mapping is empty; give min_depth and/or max_depth");
	if (r->min_depth > r->max_depth)
		err(l, it.pos, "context min_depth %d is above max_depth %d: the rule could never match",
		    r->min_depth, r->max_depth);
	return 0;
}

static int uid_item(struct loader *l, const char *what, void *ctx)
{
	struct eg_rule *r = ctx;
	long long v;
	int rc;

	(void)what;
	rc = get_int(l, "uids", 0, (long long)UINT32_MAX - 1, &v);
	if (rc)
		return rc < 0 ? -EINVAL : 0;
	if (count_item(l, ev_pos(l)))
		return -EINVAL;
	if (!(r->n_uids & (r->n_uids - 1))) {
		size_t cap = r->n_uids ? (size_t)r->n_uids * 2 : 1;
		uint32_t *u = realloc(r->uids, cap * sizeof(*u));

		if (!u) {
			oom(l);
			return -ENOMEM;
		}
		r->uids = u;
	}
	r->uids[r->n_uids++] = (uint32_t)v;
	return 0;
}

static int parse_uids(struct loader *l, struct eg_rule *r)
{
	struct eg_pos pos = ev_pos(l);
	size_t n = 0;

	/* Integers, not strings: each_item would refuse nothing here, so walk by hand. */
	if (l->ev.type != YAML_SEQUENCE_START_EVENT)
		return wrong_type(l, "uids", "a list of integers");
	for (;;) {
		if (next(l))
			return -EINVAL;
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		n++;
		if (uid_item(l, "uids", r))
			return -EINVAL;
	}
	if (!n)
		err(l, pos, "'uids' is an empty list; remove the key or list something");
	return 0;
}

static struct eg_rule *new_rule(struct loader *l)
{
	struct eg_policy *p = l->p;
	struct eg_rule *r;

	if (p->n_rules >= EG_POLICY_MAX_RULES) {
		err(l, ev_pos(l), "more than %u rules", EG_POLICY_MAX_RULES);
		l->fatal = true;
		return NULL;
	}
	if (p->n_rules == p->cap_rules) {
		size_t cap = p->cap_rules ? p->cap_rules * 2 : 16;

		r = realloc(p->rules, cap * sizeof(*r));
		if (!r) {
			oom(l);
			return NULL;
		}
		p->rules = r;
		p->cap_rules = cap;
	}
	r = &p->rules[p->n_rules++];
	memset(r, 0, sizeof(*r));
	r->max_depth = EG_DEPTH_INF;
	return r;
}

/* severity: info, low, medium, high or critical (events carry it; --min-severity filters by it) */
static int parse_severity(struct loader *l, struct eg_rule *r)
{
	struct eg_pos pos = ev_pos(l);
	char *v = get_string(l, "severity", true);

	if (!v)
		return 0;
	r->severity = eg_severity_parse(v);
	if (!r->severity)
		err(l, pos, "severity '%s' is none of info, low, medium, high, critical", v);
	free(v);
	return 0;
}

/*
 * A rule of commands, or (ident, the context's id) one of a context's
 * identities: a matcher of the same keys, without name, decision or scope.
 */
static int parse_rule(struct loader *l, uint32_t ident)
{
	struct regex_list rl;
	struct map_iter it;
	struct eg_rule *r;
	uint32_t idx, extra;
	int k = 0, rc = 0;

	r = new_rule(l);
	if (!r)
		return -EINVAL;
	idx = (uint32_t)(r - l->p->rules);
	r->pos = ev_pos(l);
	r->ident_of = ident;
	map_begin(l, &it, rule_keys, ident ? "in an identity" : "in a rule");
	while (rc == 0 && (k = map_next(l, &it)) >= 0) {
		/* p->rules does not move while one rule is read: r stays valid. */
		switch (k) {
		case R_NAME:
			r->name_pos = ev_pos(l);
			r->name = get_string(l, "name", true);
			if (r->name && !r->name[0]) {
				err(l, r->name_pos, "rule name is empty");
			} else if (r->name && (!strcmp(r->name, "default") || !strcmp(r->name, "internal_bypass") ||
					       !strcmp(r->name, "on_truncated") || !strcmp(r->name, "context_limit"))) {
				/* Verdicts that no rule decided carry these names. */
				err(l, r->name_pos, "rule name '%s' is reserved; choose another", r->name);
			} else if (r->name) {
				struct eg_bucket *b = eg_htab_find(&l->names, r->name, strlen(r->name),
								   eg_hash(r->name, strlen(r->name)));

				if (b)
					err(l, r->name_pos, "duplicate rule name '%s' (first at line %d)", r->name,
					    l->p->rules[b->idx[0]].name_pos.line);
				else if (eg_htab_add(&l->names, r->name, idx))
					oom(l);
			}
			break;
		case R_BASENAMES:
			rc = each_item(l, "basenames", "a list of names, e.g. [git]", strv_item, &r->basenames);
			break;
		case R_PATHS:
			rc = each_item(l, "paths", "a list of paths or globs, e.g. [/usr/bin/*]", strv_item, &r->paths);
			break;
		case R_ARGS_PATTERNS:
			rl = (struct regex_list){ &r->args_patterns, &r->n_args_patterns, false };
			rc = each_item(l, "args_patterns", "a list of regular expressions", regex_item, &rl);
			break;
		case R_ARGS:
			rl = (struct regex_list){ &r->args, &r->n_args, true };
			rc = each_item(l, "args", "a list of regular expressions", regex_item, &rl);
			break;
		case R_CONTEXT:
			rc = parse_context(l, r);
			break;
		case R_CGROUPS:
			rc = each_item(l, "cgroups", "a list of cgroup paths, e.g. [/system.slice/foo.service]",
				       cgroup_item, &r->cgroups);
			break;
		case R_UIDS:
			rc = parse_uids(l, r);
			break;
		case R_DECISION:
			r->decision_pos = ev_pos(l);
			rc = get_decision(l, "decision", ALL_DECISIONS, &r->decision);
			r->has_decision = true;
			break;
		case R_MESSAGE:
			r->message = get_string(l, "message", true);
			break;
		case R_CONTEXTS:
			rc = each_item(l, "contexts", "a list of context names, e.g. [claude] or [none]",
				       strv_item, &r->ctx_names);
			break;
		case R_SEVERITY:
			rc = parse_severity(l, r);
			break;
		case R_TAGS:
			rc = each_item(l, "tags", "a list of words, e.g. [network, download]", strv_item, &r->tags);
			break;
		}
		if (l->fatal)
			return -EINVAL;
	}
	if (rc || k == -2)
		return -EINVAL;
	if (ident) {
		extra = it.seen & ~IDENT_KEYS;
		for (k = 0; rule_keys[k]; k++)
			if (extra & (1u << k))
				err(l, it.first[k], "'%s' does not belong in an identity, which says what the "
				    "program is (basenames, paths, args, uids)", rule_keys[k]);
		if (!(it.seen & IDENT_KEYS))
			err(l, r->pos, "an identity needs basenames, paths, args or uids");
		r->decision = EG_DECISION_ALLOW;
		r->has_decision = true;
		return 0;
	}
	if (!(it.seen & (1u << R_NAME)))
		err(l, r->pos, "rule has no 'name'");
	if (!(it.seen & (1u << R_DECISION)))
		err(l, r->pos, "rule '%s' has no 'decision' (allow, deny, approval or audit)",
		    r->name ? r->name : "?");
	return 0;
}

static int parse_commands(struct loader *l)
{
	if (l->ev.type != YAML_SEQUENCE_START_EVENT)
		return wrong_type(l, "commands", "a list of rules (- name: ...)");
	for (;;) {
		if (next(l))
			return -EINVAL;
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (l->ev.type != YAML_MAPPING_START_EVENT) {
			err(l, ev_pos(l), "each item of 'commands' must be a rule mapping (- name: ...), got %s",
			    kind(l));
			if (skip(l))
				return -EINVAL;
			continue;
		}
		if (parse_rule(l, 0))
			return -EINVAL;
	}
}

static void settings_defaults(struct eg_policy_settings *s);

/* A context's identities: a list of matchers, read into the identities' policy. */
static int parse_identities(struct loader *l, uint32_t id)
{
	struct eg_context *c = &l->top->contexts[id - 1];
	struct eg_pos pos = ev_pos(l);
	int rc = 0;

	if (l->ev.type != YAML_SEQUENCE_START_EVENT)
		return wrong_type(l, "identities", "a list of matchers, e.g. [{paths: [/usr/local/bin/agent]}]");
	l->p = l->top->idents;
	for (;;) {
		if (next(l)) {
			rc = -EINVAL;
			break;
		}
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		if (l->ev.type != YAML_MAPPING_START_EVENT) {
			err(l, ev_pos(l), "each identity is a mapping (- paths: [...]), got %s", kind(l));
			if (skip(l)) {
				rc = -EINVAL;
				break;
			}
			continue;
		}
		if (parse_rule(l, id)) {
			rc = -EINVAL;
			break;
		}
		c->n_ident++;
	}
	l->p = l->top;
	if (!rc && !c->n_ident)
		err(l, pos, "'identities' is an empty list: the context could never be entered");
	return rc;
}

static int parse_limits(struct loader *l, struct eg_context *c)
{
	struct map_iter it;
	long long v;
	int k, rc;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "limits", "a mapping, e.g. {max_depth: 8, max_consecutive_shells: 2}");
	map_begin(l, &it, limit_keys, "in a context's limits");
	while ((k = map_next(l, &it)) >= 0) {
		rc = get_int(l, limit_keys[k], k == LIM_MAX_SHELLS ? 1 : 0, 65535, &v);
		if (rc < 0)
			return -EINVAL;
		if (rc)
			continue;
		if (k == LIM_MAX_DEPTH)
			c->max_depth = (int32_t)v;
		else
			c->max_shells = (int32_t)v;
	}
	return k == -2 ? -EINVAL : 0;
}

static int parse_one_context(struct loader *l)
{
	struct eg_policy *p = l->top;
	struct eg_context *c;
	struct map_iter it;
	uint32_t id;
	int k = 0, rc = 0;

	if (p->n_contexts >= EG_POLICY_MAX_CONTEXTS) {
		err(l, ev_pos(l), "more than %u contexts (the kernel keeps one of 31 ids per task)",
		    EG_POLICY_MAX_CONTEXTS);
		return skip(l);
	}
	if (!p->contexts) {
		p->contexts = calloc(EG_POLICY_MAX_CONTEXTS, sizeof(*p->contexts));
		if (!p->contexts) {
			oom(l);
			return -ENOMEM;
		}
	}
	id = ++p->n_contexts;
	c = &p->contexts[id - 1];
	c->pos = ev_pos(l);
	c->max_depth = -1;
	c->max_shells = -1;
	map_begin(l, &it, actx_keys, "in a context");
	while (!rc && (k = map_next(l, &it)) >= 0) {
		switch (k) {
		case AC_NAME: {
			struct eg_pos pos = ev_pos(l);
			uint32_t j;

			c->name = get_string(l, "name", false);
			if (!c->name)
				break;
			if (!strcmp(c->name, "none")) {
				err(l, pos, "context name 'none' is reserved (a rule's contexts: [none] means outside any)");
				break;
			}
			for (j = 0; j + 1 < id; j++)
				if (p->contexts[j].name && !strcmp(p->contexts[j].name, c->name))
					err(l, pos, "duplicate context name '%s' (first at line %d)", c->name,
					    p->contexts[j].pos.line);
			break;
		}
		case AC_IDENTITIES:
			rc = parse_identities(l, id);
			break;
		case AC_LIMITS:
			rc = parse_limits(l, c);
			break;
		}
		if (l->fatal)
			return -EINVAL;
	}
	if (rc || k == -2)
		return -EINVAL;
	if (!(it.seen & (1u << AC_NAME)))
		err(l, c->pos, "context has no 'name'");
	if (!(it.seen & (1u << AC_IDENTITIES)))
		err(l, c->pos, "context '%s' has no 'identities': nothing would enter it",
		    c->name ? c->name : "?");
	return 0;
}

static int parse_contexts(struct loader *l)
{
	if (l->ev.type != YAML_SEQUENCE_START_EVENT)
		return wrong_type(l, "contexts", "a list of contexts (- name: ...)");
	if (!l->top->idents) {
		struct eg_policy *q = calloc(1, sizeof(*q));

		if (!q) {
			oom(l);
			return -ENOMEM;
		}
		settings_defaults(&q->settings);
		q->no_files = l->top->no_files;
		memcpy(q->sha256, l->top->sha256, sizeof(q->sha256));
		l->top->idents = q;
	}
	for (;;) {
		if (next(l))
			return -EINVAL;
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (l->ev.type != YAML_MAPPING_START_EVENT) {
			err(l, ev_pos(l), "each item of 'contexts' must be a mapping (- name: ...), got %s", kind(l));
			if (skip(l))
				return -EINVAL;
			continue;
		}
		if (parse_one_context(l))
			return -EINVAL;
	}
}

/* Rules' contexts: names, now that every context is known, into masks. */
static void resolve_contexts(struct loader *l)
{
	struct eg_policy *p = l->top;
	size_t i;
	uint32_t j, id;

	for (i = 0; i < p->n_rules; i++) {
		struct eg_rule *r = &p->rules[i];

		for (j = 0; j < r->ctx_names.n; j++) {
			const char *n = r->ctx_names.v[j];

			id = strcmp(n, "none") ? policy_context_id(p, n) : 0;
			if (!id && strcmp(n, "none")) {
				err(l, r->ctx_names.pos[j], "rule '%s' names context '%.64s', which the policy does "
				    "not define (contexts: [- name: %.64s ...])", r->name ? r->name : "?", n, n);
				continue;
			}
			r->ctx_mask |= 1u << id;
		}
	}
}

static int parse_execve(struct loader *l)
{
	struct eg_policy_settings *s = &l->p->settings;
	struct map_iter it;
	long long v;
	int k = 0, rc = 0;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "execve", "a mapping");
	map_begin(l, &it, execve_keys, "in sandbox.seccomp.execve");
	while (rc >= 0 && (k = map_next(l, &it)) >= 0) {
		switch (k) {
		case EX_ENABLED:
			rc = get_bool(l, "enabled", &s->execve_enabled);
			break;
		case EX_MAX_ARGC:
			rc = get_int(l, "max_argc", 1, INT32_MAX, &v);
			if (!rc)
				s->max_argc = (uint32_t)v;
			break;
		case EX_MAX_ARGV_BYTES:
			rc = get_int(l, "max_argv_bytes", 1, INT32_MAX, &v);
			if (!rc)
				s->max_argv_bytes = (uint32_t)v;
			break;
		case EX_ON_TRUNCATED:
			l->p->on_truncated_pos = ev_pos(l);
			rc = get_decision(l, "on_truncated",
					  1u << EG_DECISION_DENY | 1u << EG_DECISION_ALLOW | 1u << EG_DECISION_APPROVAL,
					  &s->on_truncated);
			break;
		case EX_APPROVAL_TIMEOUT: {
			uint64_t ms;

			l->p->approval_timeout_pos = ev_pos(l);
			if (!is_scalar(l) || is_null(l)) {
				rc = wrong_type(l, "approval_timeout", "a duration (10s, 500ms, 2m)");
				break;
			}
			if (eg_parse_duration_ms(sval(l), &ms)) {
				err(l, ev_pos(l), "'approval_timeout' must be a duration like 10s, 500ms, 2m or 1m30s "
				    "(a plain number is seconds), got '%.64s'", sval(l));
			} else if (ms < 1 || ms > 24ull * 3600 * 1000) {
				err(l, ev_pos(l), "'approval_timeout' must be from 1ms to 24h, got '%.64s'", sval(l));
			} else {
				s->approval_timeout_ms = ms;
				s->approval_timeout_set = true;
			}
			break;
		}
		case EX_APPROVAL_TIMEOUT_ACTION: {
			enum eg_decision d = EG_DECISION_DENY;

			rc = get_decision(l, "approval_timeout_action",
					  1u << EG_DECISION_DENY | 1u << EG_DECISION_ALLOW, &d);
			s->approval_timeout_action = d == EG_DECISION_ALLOW ? EG_TIMEOUT_ALLOW : EG_TIMEOUT_DENY;
			break;
		}
		case EX_ON_ERROR:
			rc = get_decision(l, "on_error",
					  1u << EG_DECISION_DENY | 1u << EG_DECISION_ALLOW | 1u << EG_DECISION_APPROVAL,
					  &s->on_error);
			break;
		case EX_INTERNAL_BYPASS:
			l->p->bypass_pos = ev_pos(l);
			rc = each_item(l, "internal_bypass", "a list of paths or globs", strv_item, &l->p->bypass);
			break;
		}
		if (l->fatal)
			return -EINVAL;
	}
	return (rc < 0 || k == -2) ? -EINVAL : 0;
}

static int parse_unix_socket(struct loader *l)
{
	struct map_iter it;
	bool ignored;
	int k;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "unix_socket", "a mapping");
	map_begin(l, &it, unix_socket_keys, "in sandbox.seccomp.unix_socket");
	while ((k = map_next(l, &it)) >= 0)
		if (get_bool(l, "enabled", &ignored))
			return -EINVAL;
	return k == -2 ? -EINVAL : 0;
}

static int parse_seccomp(struct loader *l)
{
	struct map_iter it;
	bool ignored;
	int k = 0, rc = 0;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "seccomp", "a mapping");
	map_begin(l, &it, seccomp_keys, "in sandbox.seccomp");
	while (!rc && (k = map_next(l, &it)) >= 0) {
		switch (k) {
		case SECCOMP_ENABLED:
			/* Accepted for compatibility with agent sandbox configs; execgate decides per session. */
			rc = get_bool(l, "enabled", &ignored);
			break;
		case SECCOMP_UNIX_SOCKET:
			rc = parse_unix_socket(l);
			break;
		case SECCOMP_EXECVE:
			rc = parse_execve(l);
			break;
		}
	}
	return (rc || k == -2) ? -EINVAL : 0;
}

static int parse_sandbox(struct loader *l)
{
	struct map_iter it;
	int k;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "sandbox", "a mapping");
	map_begin(l, &it, sandbox_keys, "in sandbox");
	while ((k = map_next(l, &it)) >= 0)
		if (parse_seccomp(l))
			return -EINVAL;
	return k == -2 ? -EINVAL : 0;
}

/* ---- the session's boundary: filesystem:, network:, environment: -------- */

/* Like each_item, but an empty list is a list that allows nothing. */
static int boundary_list(struct loader *l, const char *what, const char *want,
			 int (*item)(struct loader *l, const char *what, void *ctx), void *ctx)
{
	if (l->ev.type != YAML_SEQUENCE_START_EVENT)
		return wrong_type(l, what, want);
	for (;;) {
		if (next(l))
			return -EINVAL;
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (!is_scalar(l) || is_null(l)) {
			err(l, ev_pos(l), "items of '%s' must be single values (%s), got %s", what, want, kind(l));
			if (skip(l))
				return -EINVAL;
			continue;
		}
		if (item(l, what, ctx))
			return -EINVAL;
	}
}

/* An absolute path, or the word workspace (the session's, given when it starts). */
static int fs_path_item(struct loader *l, const char *what, void *ctx)
{
	struct eg_pos pos = ev_pos(l);
	char *s = get_string(l, what, false);

	if (!s)
		return l->fatal ? -EINVAL : 0;
	if (s[0] != '/' && strcmp(s, "workspace")) {
		err(l, pos, "'%s' lists absolute paths or the word workspace, got '%.64s'", what, s);
		free(s);
		return 0;
	}
	return strv_push(l, ctx, s, pos);
}

struct port_list {
	uint16_t **v;
	size_t *n;
};

static int port_item(struct loader *l, const char *what, void *ctx)
{
	struct port_list *pl = ctx;
	long long v;
	uint16_t *nv;
	int rc;

	if (count_item(l, ev_pos(l)))
		return -EINVAL;
	rc = get_int(l, what, 0, 65535, &v);
	if (rc)
		return rc < 0 ? -EINVAL : 0;
	nv = realloc(*pl->v, (*pl->n + 1) * sizeof(**pl->v));
	if (!nv) {
		oom(l);
		return -ENOMEM;
	}
	nv[(*pl->n)++] = (uint16_t)v;
	*pl->v = nv;
	return 0;
}

/* A variable name or an fnmatch glob on names, kept upper case (names compare so). */
static int env_item(struct loader *l, const char *what, void *ctx)
{
	struct eg_pos pos = ev_pos(l);
	char *s = get_string(l, what, false), *c;

	if (!s)
		return l->fatal ? -EINVAL : 0;
	if (strchr(s, '=')) {
		err(l, pos, "'%s' lists variable names (or globs), without '=': got '%.64s'", what, s);
		free(s);
		return 0;
	}
	for (c = s; *c; c++)
		*c = toupper((unsigned char)*c);
	return strv_push(l, ctx, s, pos);
}

static int parse_filesystem(struct loader *l)
{
	struct eg_policy *p = l->p;
	struct map_iter it;
	int k = 0, rc = 0;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "filesystem", "a mapping with read, write and execute lists");
	p->boundary.filesystem = true;
	map_begin(l, &it, filesystem_keys, "in filesystem");
	while (!rc && (k = map_next(l, &it)) >= 0) {
		struct eg_strv *v = k == FS_READ ? &p->fs_read : k == FS_WRITE ? &p->fs_write : &p->fs_execute;
		struct eg_ll_paths *lp = k == FS_READ ? &p->boundary.layer.read :
					 k == FS_WRITE ? &p->boundary.layer.write : &p->boundary.layer.execute;

		lp->set = true;
		rc = boundary_list(l, filesystem_keys[k], "a list of absolute paths", fs_path_item, v);
	}
	return (rc || k == -2) ? -EINVAL : 0;
}

static int parse_network(struct loader *l)
{
	struct eg_policy *p = l->p;
	struct map_iter it;
	int k = 0, rc = 0;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "network", "a mapping with connect_tcp and bind_tcp lists of ports");
	p->boundary.network = true;
	map_begin(l, &it, network_keys, "in network");
	while (!rc && (k = map_next(l, &it)) >= 0) {
		struct port_list pl = { k == NET_CONNECT_TCP ? &p->connect_tcp : &p->bind_tcp,
					k == NET_CONNECT_TCP ? &p->n_connect_tcp : &p->n_bind_tcp };

		if (k == NET_CONNECT_TCP)
			p->boundary.layer.connect_tcp.set = true;
		else
			p->boundary.layer.bind_tcp.set = true;
		rc = boundary_list(l, network_keys[k], "a list of TCP ports", port_item, &pl);
	}
	return (rc || k == -2) ? -EINVAL : 0;
}

static int parse_environment(struct loader *l)
{
	struct map_iter it;
	int k = 0, rc = 0;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return wrong_type(l, "environment", "a mapping with a deny list");
	map_begin(l, &it, environment_keys, "in environment");
	while (!rc && (k = map_next(l, &it)) >= 0)
		rc = boundary_list(l, "deny", "a list of variable names", env_item, &l->p->env_deny);
	return (rc || k == -2) ? -EINVAL : 0;
}

/* The views policy_boundary() gives, once the lists stopped moving. */
static void boundary_views(struct eg_policy *p)
{
	struct eg_ll_layer *ly = &p->boundary.layer;

	ly->read.v = (const char *const *)p->fs_read.v;
	ly->read.n = p->fs_read.n;
	ly->write.v = (const char *const *)p->fs_write.v;
	ly->write.n = p->fs_write.n;
	ly->execute.v = (const char *const *)p->fs_execute.v;
	ly->execute.n = p->fs_execute.n;
	ly->connect_tcp.v = p->connect_tcp;
	ly->connect_tcp.n = p->n_connect_tcp;
	ly->bind_tcp.v = p->bind_tcp;
	ly->bind_tcp.n = p->n_bind_tcp;
	p->boundary.env_deny = (const char *const *)p->env_deny.v;
	p->boundary.n_env_deny = p->env_deny.n;
}

static int parse_root(struct loader *l)
{
	struct map_iter it;
	int k = 0, rc = 0;

	if (l->ev.type != YAML_MAPPING_START_EVENT) {
		err(l, ev_pos(l), "a policy is a mapping with 'commands', 'default_decision' and 'sandbox' "
		    "at the top level; this file holds %s", kind(l));
		return skip(l);
	}
	map_begin(l, &it, root_keys, "at the top level");
	while (!rc && (k = map_next(l, &it)) >= 0) {
		switch (k) {
		case ROOT_SANDBOX:
			rc = parse_sandbox(l);
			break;
		case ROOT_COMMANDS:
			rc = parse_commands(l);
			break;
		case ROOT_DEFAULT_DECISION:
			l->p->default_decision_pos = ev_pos(l);
			rc = get_decision(l, "default_decision", ALL_DECISIONS, &l->p->settings.default_decision);
			break;
		case ROOT_UNKNOWN_DEPTH:
			rc = get_word(l, "unknown_depth", "nested", "direct", &l->p->settings.unknown_depth_direct);
			break;
		case ROOT_KERNEL_APPROVAL:
			rc = get_word(l, "kernel_approval", "deny", "audit", &l->p->settings.kernel_approval_audit);
			break;
		case ROOT_CONTEXTS:
			rc = parse_contexts(l);
			break;
		case ROOT_FILESYSTEM:
			rc = parse_filesystem(l);
			break;
		case ROOT_NETWORK:
			rc = parse_network(l);
			break;
		case ROOT_ENVIRONMENT:
			rc = parse_environment(l);
			break;
		case ROOT_ON_UNSUPPORTED:
			rc = get_word(l, "on_unsupported", "deny", "allow", &l->p->boundary.on_unsupported_allow);
			break;
		}
	}
	return (rc || k == -2) ? -EINVAL : 0;
}

static int parse_stream(struct loader *l)
{
	if (next(l))
		return -EINVAL;			/* STREAM_START */
	if (next(l))
		return -EINVAL;
	if (l->ev.type == YAML_STREAM_END_EVENT) {
		err(l, (struct eg_pos){ 1, 1 }, "the policy is empty; write at least 'commands: []'");
		return -EINVAL;
	}
	if (next(l))				/* DOCUMENT_START -> the root node */
		return -EINVAL;
	if (parse_root(l))
		return -EINVAL;
	if (next(l))				/* DOCUMENT_END */
		return -EINVAL;
	if (next(l))
		return -EINVAL;
	if (l->ev.type == YAML_DOCUMENT_START_EVENT) {
		err(l, ev_pos(l), "a policy file holds one YAML document; this is a second one");
		return -EINVAL;
	}
	return 0;
}

static void settings_defaults(struct eg_policy_settings *s)
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

int policy_load_buf(const char *buf, size_t len, const char *name,
		    struct eg_policy **ret_policy, struct eg_diags *diags)
{
	return policy_load_buf_flags(buf, len, name, 0, ret_policy, diags);
}

int policy_load_buf_flags(const char *buf, size_t len, const char *name, unsigned int flags,
			  struct eg_policy **ret_policy, struct eg_diags *diags)
{
	struct loader l = {};
	struct eg_policy *p;
	int rc;

	if (!name)
		name = "<policy>";
	if (len > EG_POLICY_MAX_BYTES) {
		eg_diag_add(diags, name, (struct eg_pos){}, false,
			    "the policy is %zu bytes; the limit is %u MiB", len, EG_POLICY_MAX_BYTES >> 20);
		return -EFBIG;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		eg_diag_add(diags, name, (struct eg_pos){}, false, "out of memory");
		return -ENOMEM;
	}
	settings_defaults(&p->settings);
	p->no_files = flags & POLICY_LOAD_NO_FILES;
	sha256_hex(buf, len, p->sha256);
	/* kept: a daemon handing a session over passes its policy on as it was */
	p->source = malloc(len ? len : 1);
	if (!p->source) {
		eg_diag_add(diags, name, (struct eg_pos){}, false, "out of memory");
		free(p);
		return -ENOMEM;
	}
	memcpy(p->source, buf, len);
	p->source_len = len;

	l.buf = buf;
	l.len = len;
	l.file = name;
	l.diags = diags;
	l.p = p;
	l.top = p;
	if (!yaml_parser_initialize(&l.yp)) {
		eg_diag_add(diags, name, (struct eg_pos){}, false, "out of memory");
		policy_free(p);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&l.yp, (const unsigned char *)buf, len);
	rc = parse_stream(&l);
	l.p = p;
	if (!rc)
		resolve_contexts(&l);
	if (l.have_ev)
		yaml_event_delete(&l.ev);
	yaml_parser_delete(&l.yp);
	eg_htab_free(&l.names);
	boundary_views(p);
	if (!rc && !l.nerr) {
		rc = eg_policy_compile(p);
		if (!rc && p->idents)
			rc = eg_policy_compile(p->idents);
		if (rc)
			oom(&l);
	}
	if (rc || l.nerr) {
		if (!l.nerr)
			err(&l, (struct eg_pos){}, "cannot load the policy");
		policy_free(p);
		return l.oom ? -ENOMEM : -EINVAL;
	}
	eg_policy_lint(p, name, diags);
	*ret_policy = p;
	return 0;
}

int policy_load_fd(int fd, const char *path, struct eg_policy **ret_policy, struct eg_diags *diags)
{
	return policy_load_fd_flags(fd, path, 0, ret_policy, diags);
}

int policy_load_fd_flags(int fd, const char *path, unsigned int flags, struct eg_policy **ret_policy,
			 struct eg_diags *diags)
{
	size_t len = 0, cap;
	struct stat st;
	char *buf;
	int rc;

	if (fstat(fd, &st)) {
		rc = -errno;
		eg_diag_add(diags, path, (struct eg_pos){}, false, "cannot stat: %s", strerror(-rc));
		return rc;
	}
	if (S_ISDIR(st.st_mode)) {
		eg_diag_add(diags, path, (struct eg_pos){}, false, "is a directory, not a policy file");
		return -EISDIR;
	}
	if (S_ISREG(st.st_mode) && st.st_size > (off_t)EG_POLICY_MAX_BYTES) {
		eg_diag_add(diags, path, (struct eg_pos){}, false,
			    "the file is %lld bytes; policies are limited to %u MiB",
			    (long long)st.st_size, EG_POLICY_MAX_BYTES >> 20);
		return -EFBIG;
	}
	/* Pipes and /proc files report no size: read up to the limit plus one byte. */
	cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536;
	buf = malloc(cap);
	if (!buf) {
		eg_diag_add(diags, path, (struct eg_pos){}, false, "out of memory");
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap > EG_POLICY_MAX_BYTES) {
				eg_diag_add(diags, path, (struct eg_pos){}, false,
					    "the file is larger than %u MiB, the limit for a policy",
					    EG_POLICY_MAX_BYTES >> 20);
				free(buf);
				return -EFBIG;
			}
			cap = cap * 2 > EG_POLICY_MAX_BYTES + 1 ? EG_POLICY_MAX_BYTES + 1 : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				eg_diag_add(diags, path, (struct eg_pos){}, false, "out of memory");
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			eg_diag_add(diags, path, (struct eg_pos){}, false, "cannot read: %s", strerror(-rc));
			free(buf);
			return rc;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > EG_POLICY_MAX_BYTES) {
		eg_diag_add(diags, path, (struct eg_pos){}, false,
			    "the file is larger than %u MiB, the limit for a policy", EG_POLICY_MAX_BYTES >> 20);
		free(buf);
		return -EFBIG;
	}
	rc = policy_load_buf_flags(buf, len, path, flags, ret_policy, diags);
	free(buf);
	return rc;
}

int policy_load_file(const char *path, struct eg_policy **ret_policy, struct eg_diags *diags)
{
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		eg_diag_add(diags, path, (struct eg_pos){}, false, "cannot open: %s", strerror(-rc));
		return rc;
	}
	rc = policy_load_fd(fd, path, ret_policy, diags);
	close(fd);
	return rc;
}
