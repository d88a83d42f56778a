// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * journald's native protocol for one JSON record: a datagram of
 * "NAME=value\n" fields, or "NAME\n" + 64-bit little-endian length + value
 * + "\n" for a value with a newline. MESSAGE is a one-line summary,
 * PRIORITY the syslog severity, SYSLOG_IDENTIFIER execgate, and each of the
 * record's top-level fields is EXECGATE_<NAME> (upper case; objects and
 * arrays as their JSON text, strings as their bytes, null left out).
 */
#include <ctype.h>
#include <errno.h>
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "events/sinks.h"
#include "util/json.h"

static void put_field(struct sbuf *b, const char *name, const char *v, size_t n)
{
	uint64_t le;

	if (!memchr(v, '\n', n)) {
		sbuf_printf(b, "%s=", name);
		sbuf_put(b, v, n);
		sbuf_putc(b, '\n');
		return;
	}
	sbuf_printf(b, "%s\n", name);
	le = htole64(n);
	sbuf_put(b, (const char *)&le, 8);
	sbuf_put(b, v, n);
	sbuf_putc(b, '\n');
}

/* Exact bytes of a JSON string (surrogate escapes back to the bytes they stand for) */
static void put_string(struct sbuf *b, const char *name, const json_t *v)
{
	put_field(b, name, json_string_value(v), json_string_length(v));
}

static void summary(struct sbuf *m, const json_t *r)
{
	const char *type = json_string_value(json_object_get(r, "type"));
	const json_t *argv = json_object_get(r, "argv"), *a;
	const char *s;
	size_t i;

	sbuf_puts(m, type ? type : "record");
	if (type && !strcmp(type, "daemon")) {
		s = json_string_value(json_object_get(r, "event"));
		sbuf_printf(m, " %s", s ? s : "?");
		return;
	}
	if (type && !strcmp(type, "exit")) {
		const json_t *sig = json_object_get(r, "signal");

		s = json_string_value(json_object_get(r, "filename"));
		sbuf_printf(m, " %s pid %lld", s ? s : json_string_value(json_object_get(r, "comm")) ?: "?",
			    json_integer_value(json_object_get(r, "pid")));
		if (json_is_string(sig))
			sbuf_printf(m, " killed by %s", json_string_value(sig));
		else
			sbuf_printf(m, " exited %lld", json_integer_value(json_object_get(r, "exit_code")));
		sbuf_printf(m, " after %.3fs", json_integer_value(json_object_get(r, "duration_ns")) / 1e9);
		return;
	}
	if ((s = json_string_value(json_object_get(r, "filename"))))
		sbuf_printf(m, " %s", s);
	json_array_foreach(argv, i, a) {
		if (i == 0 || m->len > 400)
			continue;
		sbuf_putc(m, ' ');
		/* one line: a newline in an argument is shown escaped */
		for (s = json_string_value(a); s && *s; s++)
			if (*s == '\n')
				sbuf_puts(m, "\\n");
			else
				sbuf_putc(m, *s);
	}
	if (json_is_integer(json_object_get(r, "uid")))
		sbuf_printf(m, " (uid %lld", json_integer_value(json_object_get(r, "uid")));
	else
		sbuf_puts(m, " (");
	if ((s = json_string_value(json_object_get(r, "decision"))))
		sbuf_printf(m, ", %s", s);
	if ((s = json_string_value(json_object_get(r, "rule"))))
		sbuf_printf(m, " by %s", s);
	if ((s = json_string_value(json_object_get(r, "action"))))
		sbuf_printf(m, ", %s", s);
	sbuf_putc(m, ')');
}

int sink_format_journal(struct sbuf *b, const char *line, size_t len, int rule_severity)
{
	json_t *r = json_load_record(line, len), *v;
	struct sbuf m = {};
	char name[80], prio[4];
	const char *k;
	size_t i;

	if (!json_is_object(r)) {
		json_decref(r);
		return -EINVAL;
	}
	summary(&m, r);
	put_field(b, "MESSAGE", m.data ? m.data : "", m.len);
	sbuf_free(&m);
	snprintf(prio, sizeof(prio), "%d", sink_syslog_severity(line, len, rule_severity));
	put_field(b, "PRIORITY", prio, strlen(prio));
	put_field(b, "SYSLOG_IDENTIFIER", "execgate", 8);
	json_object_foreach(r, k, v) {
		size_t j = snprintf(name, sizeof(name), "EXECGATE_");

		for (i = 0; k[i] && j < 64; i++)
			name[j++] = isalnum((unsigned char)k[i]) ? toupper((unsigned char)k[i]) : '_';
		name[j] = '\0';
		if (json_is_null(v))
			continue;
		if (json_is_string(v)) {
			put_string(b, name, v);
		} else {
			char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

			if (t)
				put_field(b, name, t, strlen(t));
			free(t);
		}
	}
	json_decref(r);
	return 0;
}
