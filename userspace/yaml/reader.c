// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A typed YAML reader on libyaml's event API, pulled one event at a time
 * against a schema the caller walks: no document tree is built, aliases
 * are refused (no "billion laughs"), nesting, list items and string sizes
 * are capped, so memory follows the schema and not the input. Every error
 * has its line and column (1-based) and goes to the caller's report
 * function; reading goes on after an error where libyaml can, so a user
 * sees them all at once. Unknown keys get a suggestion (a typo) or the
 * mapping they belong in.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yaml/reader.h"

void yr_err(struct yreader *l, struct eg_pos pos, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	l->nerr++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->report)
		l->report(l->report_arg, pos, msg);
}

void yr_oom(struct yreader *l)
{
	if (!l->oom)
		yr_err(l, (struct eg_pos){}, "out of memory");
	l->oom = true;
	l->fatal = true;
}

struct eg_pos yr_ev_pos(const struct yreader *l)
{
	return (struct eg_pos){ (int)l->ev.start_mark.line + 1, (int)l->ev.start_mark.column + 1 };
}

/* Optimal string alignment distance: a transposition counts as one edit. */
static size_t yr_edit_distance(const char *a, const char *b)
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
const char *yr_suggest(const char *word, const char *const *words)
{
	size_t best = (size_t)-1, len = strlen(word), limit;
	const char *pick = NULL;

	limit = len < 4 ? 1 : len < 9 ? 2 : 3;
	for (; *words; words++) {
		size_t d = yr_edit_distance(word, *words);

		if (d < best) {
			best = d;
			pick = *words;
		}
	}
	return best <= limit ? pick : NULL;
}

static void yr_parser_error(struct yreader *l)
{
	yaml_parser_t *y = &l->yp;
	struct eg_pos pos = {};
	size_t i, off;

	l->fatal = true;
	switch (y->error) {
	case YAML_MEMORY_ERROR:
		yr_oom(l);
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
			yr_err(l, pos, "not a YAML text: %s (byte 0x%02x)", y->problem,
			    (unsigned int)y->problem_value & 0xff);
		else
			yr_err(l, pos, "not a YAML text: %s", y->problem);
		return;
	default:
		pos.line = (int)y->problem_mark.line + 1;
		pos.col = (int)y->problem_mark.column + 1;
		if (y->context)
			yr_err(l, pos, "YAML syntax: %s (%s that starts at line %d, column %d)",
			    y->problem ? y->problem : "error", y->context,
			    (int)y->context_mark.line + 1, (int)y->context_mark.column + 1);
		else
			yr_err(l, pos, "YAML syntax: %s", y->problem ? y->problem : "error");
		return;
	}
}

int yr_next(struct yreader *l)
{
	if (l->have_ev) {
		yaml_event_delete(&l->ev);
		l->have_ev = false;
	}
	if (l->fatal)
		return -EINVAL;
	if (!yaml_parser_parse(&l->yp, &l->ev)) {
		yr_parser_error(l);
		return -EINVAL;
	}
	l->have_ev = true;
	switch (l->ev.type) {
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (++l->depth > l->max_nest) {
			yr_err(l, yr_ev_pos(l), "YAML nested deeper than %d levels", l->max_nest);
			l->fatal = true;
			return -EINVAL;
		}
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		l->depth--;
		break;
	case YAML_ALIAS_EVENT:
		yr_err(l, yr_ev_pos(l), "YAML aliases (*%s) are not supported here; write the value out",
		    (const char *)l->ev.data.alias.anchor);
		l->fatal = true;
		return -EINVAL;
	default:
		break;
	}
	return 0;
}

/* Consumes the node whose first event is current. */
int yr_skip(struct yreader *l)
{
	int target;

	if (l->ev.type != YAML_SEQUENCE_START_EVENT && l->ev.type != YAML_MAPPING_START_EVENT)
		return 0;
	target = l->depth - 1;
	while (l->depth > target)
		if (yr_next(l))
			return -EINVAL;
	return 0;
}

bool yr_is_scalar(const struct yreader *l)
{
	return l->ev.type == YAML_SCALAR_EVENT;
}

const char *yr_sval(const struct yreader *l)
{
	return (const char *)l->ev.data.scalar.value;
}

size_t yr_slen(const struct yreader *l)
{
	return l->ev.data.scalar.length;
}

bool yr_plain(const struct yreader *l)
{
	return l->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !l->ev.data.scalar.tag;
}

bool yr_is_null(const struct yreader *l)
{
	const char *v = yr_sval(l);

	return yr_is_scalar(l) && yr_plain(l) &&
	       (!*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL"));
}

const char *yr_kind(const struct yreader *l)
{
	switch (l->ev.type) {
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SCALAR_EVENT:
		if (yr_is_null(l))
			return "no value";
		return yr_plain(l) ? "a scalar" : "a quoted string";
	default:
		return "something else";
	}
}

/* Type error at the current node, which is then skipped. */
int yr_wrong_type(struct yreader *l, const char *what, const char *want)
{
	if (yr_is_scalar(l) && !yr_is_null(l))
		yr_err(l, yr_ev_pos(l), "'%s' must be %s, got '%.64s'", what, want, yr_sval(l));
	else
		yr_err(l, yr_ev_pos(l), "'%s' must be %s, got %s", what, want, yr_kind(l));
	return yr_skip(l);
}

/* A mapping being walked: its keys, the ones seen and where. */

static void yr_unknown_key(struct yreader *l, struct yr_map *it, const char *key)
{
	const char *hint = yr_suggest(key, it->keys);
	size_t m, k;

	if (hint) {
		yr_err(l, it->key_pos, "unknown key '%s' %s; did you mean '%s'?", key, it->where, hint);
		return;
	}
	for (m = 0; m < l->nplaces; m++) {
		for (k = 0; l->places[m].keys[k]; k++) {
			if (!strcmp(l->places[m].keys[k], key)) {
				yr_err(l, it->key_pos, "'%s' does not belong %s; it goes in %s", key,
				    it->where, l->places[m].where);
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
		yr_err(l, it->key_pos, "unknown key '%.64s' %s (known keys: %s)", key, it->where, list);
	}
}

/*
 * Steps to the next key of the mapping: returns its index with the value's
 * first event current, or -1 at the end of the mapping, or -2 when reading
 * must stop. Unknown, duplicate and non-string keys are reported and skipped.
 */
int yr_map_next(struct yreader *l, struct yr_map *it)
{
	for (;;) {
		char key[128];
		size_t k;
		int i;

		if (yr_next(l))
			return -2;
		if (l->ev.type == YAML_MAPPING_END_EVENT)
			return -1;
		it->key_pos = yr_ev_pos(l);
		if (!yr_is_scalar(l)) {
			yr_err(l, it->key_pos, "keys %s must be plain words, got %s", it->where, yr_kind(l));
			if (yr_skip(l) || yr_next(l) || yr_skip(l))
				return -2;
			continue;
		}
		k = yr_slen(l) < sizeof(key) - 1 ? yr_slen(l) : sizeof(key) - 1;
		memcpy(key, yr_sval(l), k);
		key[k] = '\0';
		for (i = 0; it->keys[i]; i++)
			if (!strcmp(it->keys[i], key) && yr_slen(l) == strlen(key))
				break;
		if (!it->keys[i]) {
			yr_unknown_key(l, it, key);
		} else if (it->seen & (1u << i)) {
			yr_err(l, it->key_pos, "duplicate key '%s' %s (first at line %d)", key, it->where,
			    it->first[i].line);
		} else {
			it->seen |= 1u << i;
			it->first[i] = it->key_pos;
			if (yr_next(l))
				return -2;
			return i;
		}
		if (yr_next(l) || yr_skip(l))
			return -2;
	}
}

void yr_map_begin(struct yreader *l, struct yr_map *it, const char *const *keys, const char *where)
{
	memset(it, 0, sizeof(*it));
	it->keys = keys;
	it->where = where;
	it->pos = yr_ev_pos(l);
}

/* A copy of the current scalar as a string for `what`; NULL after an error. */
char *yr_get_string(struct yreader *l, const char *what, bool allow_empty)
{
	char *s;

	if (!yr_is_scalar(l) || yr_is_null(l)) {
		yr_wrong_type(l, what, "a string");
		return NULL;
	}
	if (memchr(yr_sval(l), '\0', yr_slen(l))) {
		yr_err(l, yr_ev_pos(l), "'%s' contains a NUL byte", what);
		return NULL;
	}
	if (!allow_empty && !yr_slen(l)) {
		yr_err(l, yr_ev_pos(l), "'%s' is an empty string", what);
		return NULL;
	}
	if (yr_slen(l) > l->max_string) {
		yr_err(l, yr_ev_pos(l), "'%s' is longer than %zu bytes", what, l->max_string);
		return NULL;
	}
	s = strdup(yr_sval(l));
	if (!s)
		yr_oom(l);
	return s;
}

int yr_get_bool(struct yreader *l, const char *what, bool *out)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF" };
	size_t i;

	if (!yr_is_scalar(l) || !yr_plain(l))
		return yr_wrong_type(l, what, "true or false");
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(yr_sval(l), yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcmp(yr_sval(l), no[i])) {
			*out = false;
			return 0;
		}
	}
	yr_err(l, yr_ev_pos(l), "'%s' must be true or false, got '%.64s'", what, yr_sval(l));
	return 0;
}

/* Returns 0 and sets *out, or 1 after reporting an error; -EINVAL if reading must stop. */
int yr_get_int(struct yreader *l, const char *what, long long min, long long max, long long *out)
{
	const char *s;
	char *end;
	long long v;

	if (!yr_is_scalar(l) || !yr_plain(l) || yr_is_null(l)) {
		yr_err(l, yr_ev_pos(l), "'%s' must be an integer, got %s", what, yr_kind(l));
		return yr_skip(l) ? -EINVAL : 1;
	}
	s = yr_sval(l);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (!isdigit((unsigned char)s[s[0] == '-' || s[0] == '+']) || *end || errno || v < min || v > max) {
		yr_err(l, yr_ev_pos(l), "'%s' must be an integer from %lld to %lld, got '%.64s'", what, min, max, s);
		return 1;
	}
	*out = v;
	return 0;
}

int yr_count_item(struct yreader *l, struct eg_pos pos)
{
	if (++l->n_items <= l->max_items)
		return 0;
	yr_err(l, pos, "more than %u list items in one file", l->max_items);
	l->fatal = true;
	return -EINVAL;
}

/* Calls item() for each element of a list of scalars at the current event. */
int yr_each_item(struct yreader *l, const char *what, const char *want,
		     int (*item)(struct yreader *l, const char *what, void *ctx), void *ctx)
{
	struct eg_pos pos = yr_ev_pos(l);
	size_t n = 0;

	if (l->ev.type != YAML_SEQUENCE_START_EVENT)
		return yr_wrong_type(l, what, want);
	for (;;) {
		if (yr_next(l))
			return -EINVAL;
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		n++;
		if (!yr_is_scalar(l) || yr_is_null(l)) {
			yr_err(l, yr_ev_pos(l), "items of '%s' must be strings, got %s", what, yr_kind(l));
			if (yr_skip(l))
				return -EINVAL;
			continue;
		}
		if (item(l, what, ctx))
			return -EINVAL;
	}
	if (!n)
		yr_err(l, pos, "'%s' is an empty list; remove the key or list something", what);
	return 0;
}

int yr_init(struct yreader *l, const char *buf, size_t len)
{
	l->buf = buf;
	l->len = len;
	if (!l->max_nest)
		l->max_nest = 64;
	if (!l->max_items)
		l->max_items = 1000000;
	if (!l->max_string)
		l->max_string = 4096;
	if (!yaml_parser_initialize(&l->yp))
		return -ENOMEM;
	yaml_parser_set_input_string(&l->yp, (const unsigned char *)buf, len);
	return 0;
}

void yr_fini(struct yreader *l)
{
	if (l->have_ev)
		yaml_event_delete(&l->ev);
	l->have_ev = false;
	yaml_parser_delete(&l->yp);
}
