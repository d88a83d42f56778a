/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A growable byte buffer for building output; an allocation failure sticks in ->oom. */
#ifndef EG_SBUF_H
#define EG_SBUF_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf {
	char *data;
	size_t len;
	size_t cap;
	bool oom;
};

int sbuf_reserve(struct sbuf *b, size_t extra);
void sbuf_put(struct sbuf *b, const void *p, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_putc(struct sbuf *b, char c);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_reset(struct sbuf *b);
void sbuf_free(struct sbuf *b);
/* NUL-terminates without counting the NUL; returns data or "" when out of memory. */
const char *sbuf_cstr(struct sbuf *b);

#endif
