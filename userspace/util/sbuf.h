/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A growable byte buffer for building output; an allocation failure sticks in ->oom. */
#ifndef EG_SBUF_H
#define EG_SBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sbuf {
	char *data;
	size_t len;
	size_t cap;
	bool oom;
};

/* Slow path of sbuf_reserve(): grows the buffer. */
int sbuf_grow(struct sbuf *b, size_t extra);

/* Room for extra more bytes plus a NUL. The fast paths are inline: the daemon calls them per field. */
static inline int sbuf_reserve(struct sbuf *b, size_t extra)
{
	if (!b->oom && extra < b->cap && b->len + extra < b->cap)
		return 0;
	return sbuf_grow(b, extra);
}

static inline void sbuf_put(struct sbuf *b, const void *p, size_t n)
{
	if (sbuf_reserve(b, n))
		return;
	__builtin_memcpy(b->data + b->len, p, n);
	b->len += n;
}

static inline void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_put(b, s, __builtin_strlen(s));
}

static inline void sbuf_putc(struct sbuf *b, char c)
{
	if (sbuf_reserve(b, 1))
		return;
	b->data[b->len++] = c;
}
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Decimal integers without printf: the daemon writes several per event. */
void sbuf_put_u64(struct sbuf *b, uint64_t v);
void sbuf_put_i64(struct sbuf *b, int64_t v);
/* v as exactly `width` digits, zero padded (v < 10^width). */
void sbuf_put_udigits(struct sbuf *b, uint64_t v, unsigned int width);
void sbuf_reset(struct sbuf *b);
void sbuf_free(struct sbuf *b);
/* NUL-terminates without counting the NUL; returns data or "" when out of memory. */
const char *sbuf_cstr(struct sbuf *b);

#endif
