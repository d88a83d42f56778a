// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdio.h>
#include "util/jsonw.h"

/* Before a value: a comma unless it is the first in its container or follows a key. */
static void sep(struct jsonw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (!w->first[w->depth])
		sbuf_putc(w->b, ',');
	w->first[w->depth] = false;
}

static void open_c(struct jsonw *w, char c)
{
	sep(w);
	sbuf_putc(w->b, c);
	if (w->depth + 1 < JSONW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = true;
}

static void close_c(struct jsonw *w, char c)
{
	sbuf_putc(w->b, c);
	if (w->depth > 0)
		w->depth--;
}

void jsonw_start_object(struct jsonw *w) { open_c(w, '{'); }
void jsonw_end_object(struct jsonw *w) { close_c(w, '}'); }
void jsonw_start_array(struct jsonw *w) { open_c(w, '['); }
void jsonw_end_array(struct jsonw *w) { close_c(w, ']'); }

void jsonw_key(struct jsonw *w, const char *key)
{
	sep(w);
	json_str(w->b, key, strlen(key));
	sbuf_putc(w->b, ':');
	w->after_key = true;
}

void jsonw_bytes(struct jsonw *w, const char *s, size_t n)
{
	sep(w);
	json_str(w->b, s, n);
}

void jsonw_string(struct jsonw *w, const char *s)
{
	if (!s) {
		jsonw_null(w);
		return;
	}
	jsonw_bytes(w, s, strlen(s));
}

void jsonw_uint(struct jsonw *w, uint64_t v)
{
	sep(w);
	sbuf_put_u64(w->b, v);
}

void jsonw_int(struct jsonw *w, int64_t v)
{
	sep(w);
	sbuf_put_i64(w->b, v);
}

void jsonw_double(struct jsonw *w, double v)
{
	sep(w);
	sbuf_printf(w->b, "%.6g", v);
}

void jsonw_bool(struct jsonw *w, bool v)
{
	sep(w);
	sbuf_puts(w->b, v ? "true" : "false");
}

void jsonw_null(struct jsonw *w)
{
	sep(w);
	sbuf_puts(w->b, "null");
}

void jsonw_raw(struct jsonw *w, const char *json, size_t n)
{
	sep(w);
	sbuf_put(w->b, json, n);
}
