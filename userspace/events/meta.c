// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include "events/format.h"
#include "events/meta.h"
#include "util/version.h"

void meta_open(struct jsonw *w, struct sbuf *b, const char *type)
{
	struct sbuf t = {};

	jsonw_init(w, b);
	jsonw_start_object(w);
	jsonw_uint_field(w, "v", EG_SCHEMA_VERSION);
	jsonw_string_field(w, "type", type);
	format_time(&t, clock_real_ns());
	jsonw_key(w, "time");
	jsonw_bytes(w, t.data, t.len);
	sbuf_free(&t);
}

void meta_open_daemon(struct jsonw *w, struct sbuf *b, const char *event)
{
	meta_open(w, b, "daemon");
	jsonw_string_field(w, "event", event);
}

void meta_close(struct jsonw *w, struct eg_output *out)
{
	jsonw_end_object(w);
	sbuf_putc(w->b, '\n');
	if (out)
		output_end(out, EG_REC_META);
}
