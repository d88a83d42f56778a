// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "util/log.h"
#include "util/json.h"

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
	fprintf(stderr, "execgate: %s\n", msg);
}

static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void p_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("execgate: warning: ", fmt, ap);
	va_end(ap);
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("execgate: ", fmt, ap);
	va_end(ap);
}

void p_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!eg_verbose)
		return;
	va_start(ap, fmt);
	vlog("execgate: debug: ", fmt, ap);
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
