// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <string.h>
#include "util/prom.h"

static void put_escaped(struct sbuf *b, const char *s, bool help)
{
	for (; *s; s++) {
		if (*s == '\\')
			sbuf_puts(b, "\\\\");
		else if (*s == '\n')
			sbuf_puts(b, "\\n");
		else if (*s == '"' && !help)
			sbuf_puts(b, "\\\"");
		else
			sbuf_putc(b, *s);
	}
}

void prom_family(struct sbuf *b, const char *name, const char *type, const char *help)
{
	sbuf_puts(b, "# HELP ");
	sbuf_puts(b, name);
	sbuf_putc(b, ' ');
	put_escaped(b, help, true);
	sbuf_puts(b, "\n# TYPE ");
	sbuf_puts(b, name);
	sbuf_putc(b, ' ');
	sbuf_puts(b, type);
	sbuf_putc(b, '\n');
}

void prom_u64(struct sbuf *b, const char *name, uint64_t v)
{
	sbuf_puts(b, name);
	sbuf_putc(b, ' ');
	sbuf_put_u64(b, v);
	sbuf_putc(b, '\n');
}

void prom_double(struct sbuf *b, const char *name, double v)
{
	sbuf_puts(b, name);
	sbuf_printf(b, " %.3f\n", v);
}

static void label(struct sbuf *b, const char *k, const char *v)
{
	sbuf_puts(b, k);
	sbuf_puts(b, "=\"");
	put_escaped(b, v ? v : "", false);
	sbuf_putc(b, '"');
}

void prom_u64_l(struct sbuf *b, const char *name, const char *k1, const char *v1, const char *k2,
		const char *v2, uint64_t v)
{
	sbuf_puts(b, name);
	sbuf_putc(b, '{');
	label(b, k1, v1);
	if (k2) {
		sbuf_putc(b, ',');
		label(b, k2, v2);
	}
	sbuf_puts(b, "} ");
	sbuf_put_u64(b, v);
	sbuf_putc(b, '\n');
}
