/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Prometheus text exposition format (version 0.0.4): a family is one
 * "# HELP" and one "# TYPE" line followed by its samples, each
 * "name{label="value",...} value". Label values are escaped (\\, \", \n).
 */
#ifndef EG_PROM_H
#define EG_PROM_H

#include <stdint.h>
#include "util/sbuf.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* type: "counter" or "gauge"; counters' names end in _total. */
void prom_family(struct sbuf *b, const char *name, const char *type, const char *help);
void prom_u64(struct sbuf *b, const char *name, uint64_t v);
void prom_double(struct sbuf *b, const char *name, double v);
/* One sample with one or two labels (k2 NULL: one). */
void prom_u64_l(struct sbuf *b, const char *name, const char *k1, const char *v1, const char *k2,
		const char *v2, uint64_t v);

#endif
