// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "events/exit.h"
#include "events/lineage.h"
#include "trace/cgroups.h"
#include "util/json.h"
#include "util/severity.h"

int exit_decode(const void *data, size_t size, struct eg_exit_event *ret)
{
	if (size < sizeof(*ret))
		return -EINVAL;
	memcpy(ret, data, sizeof(*ret));
	return ret->type == EG_EVENT_EXIT ? 0 : -EINVAL;
}

const char *exit_signal_name(uint32_t status)
{
	static __thread char buf[16];
	unsigned int sig = status & 0x7f;
	const char *n;

	if (!sig)
		return NULL;
	n = sigabbrev_np(sig);
	if (n)
		snprintf(buf, sizeof(buf), "SIG%s", n);
	else
		snprintf(buf, sizeof(buf), "SIG%u", sig);
	return buf;
}

void format_exit_json(struct sbuf *b, const struct eg_exit_event *x, const struct eg_format_ctx *fc,
		      const struct eg_lineage_entry *e)
{
	const char *sig = exit_signal_name(x->exit_code);
	const char *cg;

	format_json_open(b, "exit", x->ktime_ns + fc->boot_to_real);
	sbuf_puts(b, ",\"exec_id\":");
	format_exec_id(b, x->pid, x->exec_ktime_ns);
	sbuf_puts(b, ",\"pid\":");
	sbuf_put_u64(b, x->pid);
	sbuf_puts(b, ",\"tid\":");
	sbuf_put_u64(b, x->tid);
	sbuf_puts(b, ",\"ppid\":");
	sbuf_put_u64(b, x->ppid);
	sbuf_puts(b, ",\"uid\":");
	sbuf_put_u64(b, x->uid);
	sbuf_puts(b, ",\"comm\":");
	json_str(b, x->comm, strnlen(x->comm, sizeof(x->comm)));
	sbuf_puts(b, ",\"filename\":");
	if (e)
		json_str(b, e->filename, e->filename_len);
	else
		sbuf_puts(b, "null");
	sbuf_puts(b, ",\"exit_code\":");
	if (sig)
		sbuf_puts(b, "null,\"signal\":");
	else
		sbuf_put_u64(b, (x->exit_code >> 8) & 0xff);
	if (sig) {
		json_str(b, sig, strlen(sig));
		sbuf_puts(b, (x->exit_code & 0x80) ? ",\"core_dumped\":true" : ",\"core_dumped\":false");
	} else {
		sbuf_puts(b, ",\"signal\":null,\"core_dumped\":false");
	}
	sbuf_puts(b, ",\"duration_ns\":");
	sbuf_put_u64(b, x->ktime_ns > x->exec_ktime_ns ? x->ktime_ns - x->exec_ktime_ns : 0);
	sbuf_puts(b, ",\"depth\":");
	sbuf_put_i64(b, x->depth);
	sbuf_puts(b, (x->flags & EG_F_DEPTH_KNOWN) ? ",\"depth_known\":true" : ",\"depth_known\":false");
	if (x->session)
		sbuf_printf(b, ",\"session\":\"s-%x\"", x->session);
	else
		sbuf_puts(b, ",\"session\":null");
	sbuf_puts(b, ",\"cgroup_id\":");
	sbuf_put_u64(b, x->cgroup_id);
	if (fc->cgroups) {
		cg = cgroup_cache_path(fc->cgroups, x->cgroup_id);
		sbuf_puts(b, ",\"cgroup\":");
		if (cg)
			json_str(b, cg, strlen(cg));
		else
			sbuf_puts(b, "null");
		format_container_json(b, fc, x->cgroup_id, cg);
	}
	if (e && e->severity) {
		sbuf_puts(b, ",\"severity\":\"");
		sbuf_puts(b, eg_severity_name(e->severity));
		sbuf_putc(b, '"');
	}
	sbuf_puts(b, "}\n");
}

void format_exit_text(struct sbuf *b, const struct eg_exit_event *x, const struct eg_format_ctx *fc,
		      const struct eg_lineage_entry *e)
{
	uint64_t real = x->ktime_ns + fc->boot_to_real, dur = x->ktime_ns - x->exec_ktime_ns;
	time_t sec = real / 1000000000ull;
	const char *sig = exit_signal_name(x->exit_code);
	size_t start = b->len;
	char name[40];
	struct tm tm;

	localtime_r(&sec, &tm);
	sbuf_printf(b, "%04d-%02d-%02d %02d:%02d:%02d.%03u %-7u %-7u %-5d %-8.8s ", tm.tm_year + 1900,
		    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		    (unsigned int)(real % 1000000000ull / 1000000), x->pid, x->ppid, x->depth,
		    format_user_name(x->uid, name, sizeof(name)));
	if (e && e->filename_len > 22)
		sbuf_printf(b, "...%-19s ", e->filename + e->filename_len - 19);
	else
		sbuf_printf(b, "%-22s ", e ? e->filename : x->comm);
	if (sig)
		sbuf_printf(b, "[exit %s%s after %.3fs]", sig, (x->exit_code & 0x80) ? " core" : "", dur / 1e9);
	else
		sbuf_printf(b, "[exit %u after %.3fs]", (x->exit_code >> 8) & 0xff, dur / 1e9);
	format_text_fit(b, start, fc->width);
	sbuf_putc(b, '\n');
}
