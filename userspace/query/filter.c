// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Most lines of a long log fail a filter, and a JSON parse costs far more
 * than looking for a few bytes. So each filter first names bytes a line
 * must hold ("decision":"deny", "session":"s-7f3a", "uid":1000, the time
 * compared as a string: every record's "time" has the same 30-byte form),
 * memmem rejects the rest, and only the survivors are parsed and tested
 * whole.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "query/query.h"
#include "util/severity.h"

#define TIME_LEN 30

static void iso(uint64_t real_ns, char ret[32])
{
	time_t t = real_ns / 1000000000ull;
	struct tm tm;

	char buf[96];

	gmtime_r(&t, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned int)(real_ns % 1000000000ull));
	snprintf(ret, 32, "%.30s", buf);
}

static uint64_t local_midnight(uint64_t now_ns, int days_back)
{
	time_t t = now_ns / 1000000000ull;
	struct tm tm;

	localtime_r(&t, &tm);
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_mday -= days_back;
	tm.tm_isdst = -1;
	return (uint64_t)mktime(&tm) * 1000000000ull;
}

int query_parse_time(const char *s, uint64_t now, char ret[32])
{
	struct tm tm = {};
	char *end;
	unsigned long long n;
	const char *p;
	size_t len = strlen(s);
	double frac = 0;
	bool utc;

	if (!strcmp(s, "now")) {
		iso(now, ret);
		return 0;
	}
	if (!strcmp(s, "today") || !strcmp(s, "yesterday")) {
		iso(local_midnight(now, s[0] == 'y'), ret);
		return 0;
	}
	/* 90s 30m 1h 2d 1w: that long ago */
	n = strtoull(s, &end, 10);
	if (end != s && end[0] && !end[1] && s[0] != '-') {
		static const struct { char u; uint64_t ns; } units[] = {
			{ 's', 1000000000ull }, { 'm', 60000000000ull }, { 'h', 3600000000000ull },
			{ 'd', 86400000000000ull }, { 'w', 604800000000000ull },
		};
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (*end == units[i].u) {
				if (n > now / units[i].ns)
					return -EINVAL;
				iso(now - n * units[i].ns, ret);
				return 0;
			}
		return -EINVAL;
	}
	/* ISO 8601: a date, a time after 'T' or ' ', seconds and a fraction optional, Z for UTC */
	p = strptime(s, "%Y-%m-%d", &tm);
	if (!p)
		return -EINVAL;
	if (*p == 'T' || *p == ' ') {
		const char *q = strptime(p + 1, "%H:%M:%S", &tm);

		if (!q)
			q = strptime(p + 1, "%H:%M", &tm);
		if (!q)
			return -EINVAL;
		p = q;
		if (*p == '.') {
			frac = strtod(p, &end);
			p = end;
		}
	}
	utc = *p == 'Z' || *p == 'z';
	if (utc)
		p++;
	if (*p || len < 10)
		return -EINVAL;
	{
		time_t t;

		tm.tm_isdst = -1;
		t = utc ? timegm(&tm) : mktime(&tm);
		if (t == (time_t)-1)
			return -EINVAL;
		iso((uint64_t)t * 1000000000ull + (uint64_t)(frac * 1e9), ret);
	}
	return 0;
}

const char *query_line_time(const char *line, size_t len)
{
	const char *p = memmem(line, len < 96 ? len : 96, "\"time\":\"", 8);

	if (!p || p + 8 + TIME_LEN > line + len)
		return NULL;
	return p + 8;
}

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool query_line_whole(const char *line, size_t len)
{
	size_t i, depth = 0;
	bool in_str = false;

	/* JSON's whitespace around the object, as the parser takes it: a CRLF file's '\r' */
	while (len && is_json_space(line[0])) {
		line++;
		len--;
	}
	while (len && is_json_space(line[len - 1]))
		len--;
	if (!len || line[0] != '{')
		return false;
	/* a record glued to a cut one: no other "{"v":" is in a whole record, not even in a string */
	if (len > 5 && memmem(line + 1, len - 1, "{\"v\":", 5))
		return false;
	for (i = 0; i < len; i++) {
		if (in_str) {
			if (line[i] == '\\')
				i++;
			else if (line[i] == '"')
				in_str = false;
			continue;
		}
		switch (line[i]) {
		case '"':
			in_str = true;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (--depth == 0)
				return i == len - 1;
			break;
		}
	}
	return false;
}

/* Plain ASCII without quotes or backslashes: its JSON form is itself */
static bool plain(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* One group of needles: the line must hold one of them. */
static void need(struct query_filter *f, const char *key, const char *const *v, size_t n, bool quoted)
{
	size_t i, g = f->n_need;

	if (!n || g == 8)
		return;
	for (i = 0; i < n; i++)
		if (!plain(v[i]) || strpbrk(v[i], "*?[") || strlen(v[i]) + strlen(key) + 8 > 160)
			return;		/* no needle: the parse decides */
	for (i = 0; i < n; i++)
		f->need[g][i].n = snprintf(f->need[g][i].s, sizeof(f->need[g][i].s), quoted ? "\"%s\":\"%s" : "\"%s\":%s",
					   key, v[i]);
	f->n_need_alt[g] = n;
	f->n_need++;
}

void query_filter_ready(struct query_filter *f)
{
	char nums[QUERY_MAX_LIST][24];
	const char *uv[QUERY_MAX_LIST];
	size_t i;

	f->n_need = 0;
	need(f, "type", f->types, f->n_types, true);
	need(f, "session", f->sessions, f->n_sessions, true);
	need(f, "decision", f->decisions, f->n_decisions, true);
	need(f, "action", f->actions, f->n_actions, true);
	need(f, "rule", f->rules, f->n_rules, true);
	need(f, "comm", f->comm, f->n_comm, true);
	need(f, "name", f->contexts, f->n_contexts, true);	/* "context":{"name":"..." */
	for (i = 0; i < f->n_uids; i++) {
		snprintf(nums[i], sizeof(nums[i]), "%lld", (long long)f->uids[i]);
		uv[i] = nums[i];
	}
	need(f, "uid", uv, f->n_uids, false);
	if (f->min_severity) {
		const char *sv[EG_SEV__COUNT];
		size_t n = 0;
		int k;

		for (k = f->min_severity; k < EG_SEV__COUNT; k++)
			sv[n++] = eg_severity_name(k);
		need(f, "severity", sv, n, true);
	}
	f->needs_parse = f->n_types || f->n_uids || f->n_comm || f->n_filename || f->n_sessions ||
			 f->n_containers || f->n_pods || f->n_contexts || f->n_decisions || f->n_actions || f->n_rules ||
			 f->min_severity;
}

bool query_prefilter(const struct query_filter *f, const char *line, size_t len)
{
	size_t g, i;

	if (f->since[0] || f->until[0]) {
		const char *t = query_line_time(line, len);

		if (t && f->since[0] && memcmp(t, f->since, TIME_LEN) < 0)
			return false;
		if (t && f->until[0] && memcmp(t, f->until, TIME_LEN) >= 0)
			return false;
	}
	for (g = 0; g < f->n_need; g++) {
		for (i = 0; i < f->n_need_alt[g]; i++)
			if (memmem(line, len, f->need[g][i].s, f->need[g][i].n))
				break;
		if (i == f->n_need_alt[g])
			return false;
	}
	return true;
}

static const char *sget(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static bool one_of(const char *v, const char *const *set, size_t n)
{
	size_t i;

	if (!n)
		return true;
	for (i = 0; v && i < n; i++)
		if (!strcmp(v, set[i]))
			return true;
	return false;
}

static bool glob_of(const char *v, const char *const *set, size_t n)
{
	size_t i;

	if (!n)
		return true;
	for (i = 0; v && i < n; i++)
		if (!fnmatch(set[i], v, 0))
			return true;
	return false;
}

static bool container_of(const json_t *c, const char *const *set, size_t n)
{
	const char *id = sget(c, "id"), *name = sget(c, "name");
	size_t i;

	if (!n)
		return true;
	for (i = 0; i < n; i++) {
		size_t l = strlen(set[i]);

		if (id && l >= 12 && !strncmp(id, set[i], l))
			return true;
		if (name && !strcmp(name, set[i]))
			return true;
	}
	return false;
}

bool query_match(const struct query_filter *f, const json_t *r)
{
	const char *t = sget(r, "time");
	json_t *v;
	size_t i;

	if (f->since[0] && (!t || strcmp(t, f->since) < 0))
		return false;
	if (f->until[0] && (!t || strcmp(t, f->until) >= 0))
		return false;
	if (!one_of(sget(r, "type"), f->types, f->n_types))
		return false;
	if (f->n_uids) {
		v = json_object_get(r, "uid");
		for (i = 0; i < f->n_uids && !(json_is_integer(v) && json_integer_value(v) == f->uids[i]); i++)
			;
		if (i == f->n_uids)
			return false;
	}
	if (!glob_of(sget(r, "comm"), f->comm, f->n_comm) || !glob_of(sget(r, "filename"), f->filename, f->n_filename))
		return false;
	if (!one_of(sget(r, "session"), f->sessions, f->n_sessions) ||
	    !one_of(sget(r, "decision"), f->decisions, f->n_decisions) ||
	    !one_of(sget(r, "action"), f->actions, f->n_actions) || !one_of(sget(r, "rule"), f->rules, f->n_rules))
		return false;
	if (!container_of(json_object_get(r, "container"), f->containers, f->n_containers))
		return false;
	if (!one_of(sget(json_object_get(r, "pod"), "name"), f->pods, f->n_pods))
		return false;
	if (!one_of(sget(json_object_get(r, "context"), "name"), f->contexts, f->n_contexts))
		return false;
	if (f->min_severity) {
		const char *s = sget(r, "severity");

		if (!s || eg_severity_parse(s) < f->min_severity)
			return false;
	}
	return true;
}
