/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A structured JSON writer on the hot path's primitives (sbuf, json_str),
 * in the manner of bpftool's json_writer: the caller opens and closes
 * objects and arrays, the writer places the commas. Used for every cold-path
 * record (daemon, lost, approval), control-socket replies and --json output.
 */
#ifndef EG_JSONW_H
#define EG_JSONW_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "util/json.h"
#include "util/sbuf.h"

#define JSONW_MAX_DEPTH 16

struct jsonw {
	struct sbuf *b;
	int depth;
	bool first[JSONW_MAX_DEPTH];
	bool after_key;
};

static inline void jsonw_init(struct jsonw *w, struct sbuf *b)
{
	memset(w, 0, sizeof(*w));
	w->b = b;
	w->first[0] = true;
}

void jsonw_start_object(struct jsonw *w);
void jsonw_end_object(struct jsonw *w);
void jsonw_start_array(struct jsonw *w);
void jsonw_end_array(struct jsonw *w);
void jsonw_key(struct jsonw *w, const char *key);
void jsonw_string(struct jsonw *w, const char *s);	/* NULL writes null */
void jsonw_bytes(struct jsonw *w, const char *s, size_t n);
void jsonw_uint(struct jsonw *w, uint64_t v);
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_double(struct jsonw *w, double v);
void jsonw_bool(struct jsonw *w, bool v);
void jsonw_null(struct jsonw *w);
/* A value already rendered as JSON (trusted: our own writer made it). */
void jsonw_raw(struct jsonw *w, const char *json, size_t n);

/* key + value in one call */
static inline void jsonw_string_field(struct jsonw *w, const char *k, const char *v)
{
	jsonw_key(w, k);
	jsonw_string(w, v);
}
static inline void jsonw_uint_field(struct jsonw *w, const char *k, uint64_t v)
{
	jsonw_key(w, k);
	jsonw_uint(w, v);
}
static inline void jsonw_int_field(struct jsonw *w, const char *k, int64_t v)
{
	jsonw_key(w, k);
	jsonw_int(w, v);
}
static inline void jsonw_bool_field(struct jsonw *w, const char *k, bool v)
{
	jsonw_key(w, k);
	jsonw_bool(w, v);
}

#endif
