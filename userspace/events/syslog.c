// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * RFC 5424 for one JSON record:
 *   <PRI>1 TIMESTAMP HOSTNAME execgate PROCID MSGID - MSG
 * PRI = facility (authpriv, 10) * 8 + severity; TIMESTAMP the record's time
 * to the microsecond (RFC 5424 allows six digits); MSGID the record's type;
 * no structured data; MSG the JSON record itself, unchanged.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "events/sinks.h"
#include "util/severity.h"

/* The value of "key":"..." near the start of a record (type and time come first) */
static const char *field(const char *line, size_t len, const char *key, size_t *ret_n)
{
	size_t kl = strlen(key);
	const char *p = memmem(line, len < 256 ? len : 256, key, kl), *end;

	if (!p)
		return NULL;
	p += kl;
	end = memchr(p, '"', line + len - p);
	if (!end)
		return NULL;
	*ret_n = end - p;
	return p;
}

static bool has(const char *line, size_t len, const char *s)
{
	return memmem(line, len, s, strlen(s)) != NULL;
}

int sink_syslog_severity(const char *line, size_t len, int rule_severity)
{
	static const int by_rule[EG_SEV__COUNT] = { 6, 6, 5, 4, 3, 2 };
	size_t n;
	const char *type = field(line, len, "\"type\":\"", &n);

	if (rule_severity > 0 && rule_severity < EG_SEV__COUNT)
		return by_rule[rule_severity];
	if (!type)
		return 6;
	if (n == 4 && !memcmp(type, "lost", 4))
		return 3;	/* err: records are missing */
	if (has(line, len, "\"action\":\"killed\"") || has(line, len, "\"action\":\"blocked\"") ||
	    has(line, len, "\"decision\":\"deny\""))
		return 4;	/* warning */
	if ((n == 6 && !memcmp(type, "daemon", 6)) || (n == 8 && !memcmp(type, "approval", 8)) ||
	    has(line, len, "\"decision\":\"approval\"") || has(line, len, "\"decision\":\"audit\""))
		return 5;	/* notice */
	return 6;		/* info */
}

/* One JSON string's body from p (after its quote): its end (the closing quote), or NULL. */
static const char *string_end(const char *p, const char *end)
{
	while (p < end && *p != '"')
		p += *p == '\\' ? 2 : 1;
	return p < end ? p : NULL;
}

/* The bytes of a string body from p that fit in room, cut before an escape or a UTF-8 sequence. */
static size_t cut_at(const char *p, size_t n, size_t room)
{
	size_t i = 0, u;

	while (i < n) {
		unsigned char c = p[i];

		u = c == '\\' ? (i + 1 < n && p[i + 1] == 'u' ? 6 : 2) :
		    c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (i + u > room || i + u > n)
			break;
		i += u;
	}
	return i;
}

int sink_cut_argv(struct sbuf *out, const char *line, size_t len, size_t max)
{
	static const char key[] = "\"argv\":[";
	const char *end = line + len, *a = memmem(line, len, key, sizeof(key) - 1), *p, *q, *close;
	size_t fixed, room, kept = 0, n, total = 0;
	char tail[96];
	int tl;

	if (!a || !len || line[len - 1] != '}')
		return -EINVAL;
	a += sizeof(key) - 1;
	/* the array's strings: their bodies are what may be cut */
	for (p = a; p < end && *p != ']'; ) {
		if (*p == ',')
			p++;
		if (p >= end || *p != '"' || !(q = string_end(p + 1, end)))
			return -EINVAL;
		total++;
		p = q + 1;
	}
	if (p >= end)
		return -EINVAL;
	close = p;
	tl = snprintf(tail, sizeof(tail), ",\"syslog_cut\":{\"bytes\":%zu,\"argc\":%zu,\"argv_kept\":", len, total);
	/* all but the array's insides, and the note (argv_kept's digits, "}}") */
	fixed = (size_t)(a - line) + (size_t)(end - close) + (size_t)tl + 24;
	if (fixed >= max)
		return -E2BIG;
	room = max - fixed;
	sbuf_put(out, line, a - line);
	/* each argument as much as fits, in order; what does not fit is left out */
	for (p = a; p < close && room > 3; ) {
		size_t c;

		if (*p == ',')
			p++;
		q = string_end(p + 1, end);
		n = q - p - 1;
		if (kept)
			room--;	/* the comma */
		c = cut_at(p + 1, n, room - 2);
		if (kept)
			sbuf_putc(out, ',');
		sbuf_putc(out, '"');
		sbuf_put(out, p + 1, c);
		sbuf_putc(out, '"');
		room -= c + 2;
		kept++;
		if (c < n)
			break;
		p = q + 1;
	}
	sbuf_put(out, close, end - close - 1);
	sbuf_put(out, tail, tl);
	sbuf_printf(out, "%zu}}", kept);
	return out->oom ? -ENOMEM : 0;
}

int sink_stub_record(struct sbuf *out, const char *line, size_t len)
{
	static const char *const keys[] = { "v", "type", "time", "exec_id", "pid", "uid", "session", "decision",
					     "rule", "action", "layer", "reason" };
	const char *end = line + len;
	size_t i, n = 0;

	sbuf_putc(out, '{');
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char k[32];
		const char *p, *q;
		int kl = snprintf(k, sizeof(k), "\"%s\":", keys[i]);

		/* the first of its name is the record's own (nested objects come after these) */
		p = memmem(line, len, k, kl);
		if (!p)
			continue;
		p += kl;
		if (p < end && *p == '"') {
			q = string_end(p + 1, end);
			if (!q)
				continue;
			sbuf_printf(out, "%s%s\"", n++ ? "," : "", k);
			sbuf_put(out, p + 1, cut_at(p + 1, q - p - 1, 256));
			sbuf_putc(out, '"');
		} else {
			for (q = p; q < end && *q != ',' && *q != '}' && q - p < 32; q++)
				;
			if (q == p || q - p >= 32)
				continue;
			sbuf_printf(out, "%s%s", n++ ? "," : "", k);
			sbuf_put(out, p, q - p);
		}
	}
	sbuf_printf(out, "%s\"syslog_cut\":{\"bytes\":%zu,\"stub\":true}}", n ? "," : "", len);
	return out->oom ? -ENOMEM : 0;
}

int sink_format_syslog(struct sbuf *b, const char *line, size_t len, int rule_severity, const char *host,
		       int pid)
{
	size_t tn = 0, yn = 0;
	const char *t = field(line, len, "\"time\":\"", &tn);
	const char *type = field(line, len, "\"type\":\"", &yn);

	sbuf_printf(b, "<%d>1 ", SYSLOG_FACILITY * 8 + sink_syslog_severity(line, len, rule_severity));
	/* 2026-01-19T14:30:00.123456789Z -> 2026-01-19T14:30:00.123456Z */
	if (t && tn == 30) {
		sbuf_put(b, t, 26);
		sbuf_putc(b, 'Z');
	} else {
		sbuf_putc(b, '-');
	}
	sbuf_printf(b, " %s execgate %d ", host, pid);
	if (type && yn && yn <= 32)
		sbuf_put(b, type, yn);
	else
		sbuf_putc(b, '-');
	sbuf_puts(b, " - ");
	sbuf_put(b, line, len);
	return 0;
}
