// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Strings for a terminal with their control characters shown as \xNN. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "util/termsafe.h"

size_t eg_control_len(const char *s)
{
	unsigned char c = s[0];

	if (c < 0x20 || c == 0x7f)
		return 1;
	if (c == 0xc2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] < 0xa0)
		return 2;
	/* U+2028, U+2029: line and paragraph separators (a YAML comment, a script's line, end at them) */
	if (c == 0xe2 && (unsigned char)s[1] == 0x80 && ((unsigned char)s[2] == 0xa8 || (unsigned char)s[2] == 0xa9))
		return 3;
	return 0;
}

/* Puts one character of s, a control one as \xNN each byte; returns its bytes. */
static size_t put_char(struct sbuf *b, const char *s)
{
	size_t n = eg_control_len(s), i;

	if (!n) {
		sbuf_putc(b, *s);
		return 1;
	}
	for (i = 0; i < n; i++)
		sbuf_printf(b, "\\x%02x", (unsigned char)s[i]);
	return n;
}

void eg_put_safe(struct sbuf *b, const char *s)
{
	while (*s)
		s += put_char(b, s);
}

void eg_put_arg(struct sbuf *b, const char *s)
{
	bool quote = !*s || strpbrk(s, " \t'\"\\$`|&;<>()*?[]{}!#~") != NULL;

	if (quote)
		sbuf_putc(b, '\'');
	while (*s) {
		if (*s == '\'' && quote) {
			sbuf_puts(b, "'\\''");
			s++;
		} else {
			s += put_char(b, s);
		}
	}
	if (quote)
		sbuf_putc(b, '\'');
}

const char *eg_term_safe(const char *s, char *buf, size_t len)
{
	struct sbuf b = {};

	if (!s)
		return NULL;
	if (!len)
		return "";
	eg_put_safe(&b, s);
	snprintf(buf, len, "%s", sbuf_cstr(&b));
	sbuf_free(&b);
	return buf;
}
