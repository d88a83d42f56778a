// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sbuf.h"

int sbuf_reserve(struct sbuf *b, size_t extra)
{
	size_t want, cap;
	char *p;

	if (b->oom)
		return -ENOMEM;
	if (extra > ((size_t)-1) / 2 - b->len) {
		b->oom = true;
		return -ENOMEM;
	}
	want = b->len + extra + 1;
	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return -ENOMEM;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

void sbuf_put(struct sbuf *b, const void *p, size_t n)
{
	if (sbuf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_put(b, s, strlen(s));
}

void sbuf_putc(struct sbuf *b, char c)
{
	if (sbuf_reserve(b, 1))
		return;
	b->data[b->len++] = c;
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sbuf_reserve(b, 64))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		if (sbuf_reserve(b, n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += n;
}

void sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	b->oom = false;
}

void sbuf_free(struct sbuf *b)
{
	if (!b)
		return;
	free(b->data);
	*b = (struct sbuf){};
}

const char *sbuf_cstr(struct sbuf *b)
{
	if (sbuf_reserve(b, 0))
		return "";
	b->data[b->len] = '\0';
	return b->data;
}
