// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/sbuf.h"

int sbuf_grow(struct sbuf *b, size_t extra)
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

static const char digits2[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Decimal digits of v (1-20). */
static inline unsigned int u64_digits(uint64_t v)
{
	unsigned int n = 1;

	for (; v >= 10000; v /= 10000)
		n += 4;
	if (v >= 1000)
		return n + 3;
	if (v >= 100)
		return n + 2;
	return v >= 10 ? n + 1 : n;
}

/*
 * Written in place, back to front, two digits a step: no copy through a
 * temporary (a memcpy call per number was a tenth of the daemon's time).
 */
void sbuf_put_u64(struct sbuf *b, uint64_t v)
{
	unsigned int n = u64_digits(v);
	char *p;

	if (sbuf_reserve(b, n))
		return;
	p = b->data + b->len + n;
	b->len += n;
	while (v >= 100) {
		unsigned int r = v % 100;

		v /= 100;
		p -= 2;
		p[0] = digits2[2 * r];
		p[1] = digits2[2 * r + 1];
	}
	if (v >= 10) {
		p -= 2;
		p[0] = digits2[2 * v];
		p[1] = digits2[2 * v + 1];
	} else {
		*--p = '0' + v;
	}
}

void sbuf_put_i64(struct sbuf *b, int64_t v)
{
	if (v < 0) {
		sbuf_putc(b, '-');
		sbuf_put_u64(b, -(uint64_t)v);
	} else {
		sbuf_put_u64(b, v);
	}
}

void sbuf_put_udigits(struct sbuf *b, uint64_t v, unsigned int width)
{
	char *p, *start;

	if (width > 20)
		width = 20;
	if (sbuf_reserve(b, width))
		return;
	start = b->data + b->len;
	p = start + width;
	b->len += width;
	if (v <= UINT32_MAX) {
		uint32_t w = (uint32_t)v;	/* a time's fields: the cheaper division */

		while (p > start) {
			*--p = '0' + w % 10;
			w /= 10;
		}
		return;
	}
	while (p > start) {
		*--p = '0' + v % 10;
		v /= 10;
	}
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
