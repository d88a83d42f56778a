// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * RFC 5424 for one JSON record:
 *   <PRI>1 TIMESTAMP HOSTNAME execgate PROCID MSGID - MSG
 * PRI = facility (authpriv, 10) * 8 + severity; TIMESTAMP the record's time
 * to the microsecond (RFC 5424 allows six digits); MSGID the record's type;
 * no structured data; MSG the JSON record itself, unchanged.
 */
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
