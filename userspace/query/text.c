// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* One line a record for a person: local time, pid, user, decision, action, what ran. */
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "query/query.h"
#include "query/view.h"
#include "util/termsafe.h"

const char *view_user(const json_t *r, char *buf, size_t len)
{
	static __thread struct { long long uid; char name[33]; bool set; } cache[64];
	json_t *u = json_object_get(r, "uid");
	long long uid;
	unsigned int slot;
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (!json_is_integer(u)) {
		snprintf(buf, len, "-");
		return buf;
	}
	uid = json_integer_value(u);
	slot = (unsigned long long)uid % 64;
	if (!cache[slot].set || cache[slot].uid != uid) {
		if (!getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) && res)
			snprintf(cache[slot].name, sizeof(cache[slot].name), "%s", pw.pw_name);
		else
			snprintf(cache[slot].name, sizeof(cache[slot].name), "%lld", uid);
		cache[slot].uid = uid;
		cache[slot].set = true;
	}
	snprintf(buf, len, "%s", cache[slot].name);
	return buf;
}

void view_time(const json_t *r, char *buf, size_t len)
{
	const char *t = json_string_value(json_object_get(r, "time"));
	struct tm tm = {};
	time_t sec;
	const char *p;
	unsigned int ms = 0;

	if (!t || !(p = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm))) {
		char safe[64];

		snprintf(buf, len, "%-23s", t ? eg_term_safe(t, safe, sizeof(safe)) : "-");
		return;
	}
	if (*p == '.' && strlen(p) >= 4)
		ms = (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
	sec = timegm(&tm);
	localtime_r(&sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02d %02d:%02d:%02d.%03u", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

void view_command(struct sbuf *b, const json_t *r)
{
	const json_t *argv = json_object_get(r, "argv"), *a;
	size_t i;

	if (!json_array_size(argv)) {
		const char *f = json_string_value(json_object_get(r, "filename"));

		eg_put_arg(b, f ? f : "?");
		return;
	}
	json_array_foreach(argv, i, a) {
		if (i)
			sbuf_putc(b, ' ');
		eg_put_arg(b, json_string_value(a) ? json_string_value(a) : "");
		if (b->len > 8192)
			break;
	}
	if (json_is_true(json_object_get(r, "truncated")))
		sbuf_puts(b, " ...");
}

/* "exit 0 after 1.234s", "killed by SIGKILL after 0.002s" */
void view_exit(struct sbuf *b, const json_t *x)
{
	char safe[64];
	const char *sig = eg_term_safe(json_string_value(json_object_get(x, "signal")), safe, sizeof(safe));
	double s = json_integer_value(json_object_get(x, "duration_ns")) / 1e9;

	if (sig)
		sbuf_printf(b, "killed by %s%s after %.3fs", sig,
			    json_is_true(json_object_get(x, "core_dumped")) ? " (core)" : "", s);
	else
		sbuf_printf(b, "exit %lld after %.3fs", json_integer_value(json_object_get(x, "exit_code")), s);
}

static size_t columns(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

void view_fit(struct sbuf *b, size_t start, unsigned int width)
{
	size_t keep = start, c = 0;

	if (!width || columns(b->data + start, b->len - start) <= width)
		return;
	while (keep < b->len && c < width - 1) {
		keep++;
		while (keep < b->len && ((unsigned char)b->data[keep] & 0xc0) == 0x80)
			keep++;
		c++;
	}
	b->len = keep;
	sbuf_putc(b, '+');
}

void query_text(struct sbuf *b, const json_t *r, unsigned int width)
{
	char t[80], user[40], dec_s[40], act_s[40], s1[256], s2[256];
	const char *type = eg_term_safe(json_string_value(json_object_get(r, "type")), s1, sizeof(s1));
	const char *dec = eg_term_safe(json_string_value(json_object_get(r, "decision")), dec_s, sizeof(dec_s));
	const char *act = eg_term_safe(json_string_value(json_object_get(r, "action")), act_s, sizeof(act_s));
	size_t start = b->len;

	view_time(r, t, sizeof(t));
	sbuf_printf(b, "%s %-7lld %-8.8s %-8s %-11s ", t, json_integer_value(json_object_get(r, "pid")),
		    view_user(r, user, sizeof(user)), dec ? dec : "-", act ? act : "-");
	if (!type) {
		sbuf_puts(b, "?");
	} else if (!strcmp(type, "exec")) {
		view_command(b, r);
	} else if (!strcmp(type, "exec_failed")) {
		sbuf_printf(b, "[%s] ", eg_term_safe(json_string_value(json_object_get(r, "error")), s2, sizeof(s2))
					?: "failed");
		view_command(b, r);
	} else if (!strcmp(type, "exit")) {
		const char *f = json_string_value(json_object_get(r, "filename"));

		sbuf_puts(b, "[");
		view_exit(b, r);
		sbuf_puts(b, "] ");
		/* as an exec's file name: its bytes are anyone's */
		eg_put_arg(b, f ? f : json_string_value(json_object_get(r, "comm")) ?: "?");
	} else {
		const char *ev = eg_term_safe(json_string_value(json_object_get(r, "event")), s2, sizeof(s2));

		sbuf_printf(b, "# %s%s%s", type, ev ? " " : "", ev ? ev : "");
	}
	view_fit(b, start, width);
	sbuf_putc(b, '\n');
}
