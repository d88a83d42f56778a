// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "util/log.h"
#include "util/json.h"

const char *eg_verb;
bool eg_verbose;
bool eg_json_errors;

void p_err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (eg_json_errors) {
		struct sbuf b = {};

		sbuf_puts(&b, "{\"error\":");
		json_str(&b, msg, strlen(msg));
		sbuf_puts(&b, "}\n");
		fwrite(b.data, 1, b.len, stdout);
		fflush(stdout);
		sbuf_free(&b);
		return;
	}
	if (eg_verb)
		fprintf(stderr, "execgate %s: %s\n", eg_verb, msg);
	else
		fprintf(stderr, "execgate: %s\n", msg);
}

static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* one write: lines from several processes do not interleave */
	if (eg_verb)
		fprintf(stderr, "execgate %s: %s%s\n", eg_verb, prefix, msg);
	else
		fprintf(stderr, "execgate: %s%s\n", prefix, msg);
}

void p_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("warning: ", fmt, ap);
	va_end(ap);
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void p_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!eg_verbose)
		return;
	va_start(ap, fmt);
	vlog("debug: ", fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !eg_verbose)
		return 0;
	if (level == LIBBPF_INFO && !eg_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void eg_libbpf_setup(void)
{
	libbpf_set_print(libbpf_print);
}
