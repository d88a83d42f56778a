// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "format.h"
#include "json.h"
#include "version.h"

uint64_t clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int64_t clock_boot_to_real(void)
{
	struct timespec b;
	uint64_t real = clock_real_ns();

	clock_gettime(CLOCK_BOOTTIME, &b);
	return (int64_t)(real - ((uint64_t)b.tv_sec * 1000000000ull + b.tv_nsec));
}

void format_time(struct sbuf *b, uint64_t real_ns)
{
	time_t sec = real_ns / 1000000000ull;
	struct tm tm;

	gmtime_r(&sec, &tm);
	sbuf_printf(b, "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		    (unsigned int)(real_ns % 1000000000ull));
}

static const struct {
	int err;
	const char *name;
} errnames[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" }, { EINTR, "EINTR" },
	{ EIO, "EIO" }, { ENXIO, "ENXIO" }, { E2BIG, "E2BIG" }, { ENOEXEC, "ENOEXEC" },
	{ EBADF, "EBADF" }, { EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" }, { EACCES, "EACCES" },
	{ EFAULT, "EFAULT" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" }, { ENOTDIR, "ENOTDIR" },
	{ EISDIR, "EISDIR" }, { EINVAL, "EINVAL" }, { ENFILE, "ENFILE" }, { EMFILE, "EMFILE" },
	{ ETXTBSY, "ETXTBSY" }, { ENOSPC, "ENOSPC" }, { ENAMETOOLONG, "ENAMETOOLONG" },
	{ ENOSYS, "ENOSYS" }, { ELOOP, "ELOOP" }, { ELIBBAD, "ELIBBAD" }, { EOPNOTSUPP, "EOPNOTSUPP" },
	{ ENOTSUP, "ENOTSUP" }, { ECANCELED, "ECANCELED" }, { EKEYREJECTED, "EKEYREJECTED" },
};

const char *errno_name(int err)
{
	static __thread char buf[16];
	size_t i;

	if (err < 0)
		err = -err;
	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].err == err)
			return errnames[i].name;
	snprintf(buf, sizeof(buf), "E%d", err);
	return buf;
}

void format_json_open(struct sbuf *b, const char *type, uint64_t real_ns)
{
	sbuf_printf(b, "{\"v\":%d,\"type\":\"%s\",\"time\":\"", EG_SCHEMA_VERSION, type);
	format_time(b, real_ns);
	sbuf_putc(b, '"');
}

static void json_exec_id(struct sbuf *b, uint32_t pid, uint64_t ktime)
{
	sbuf_printf(b, "\"%" PRIu32 ":%" PRIu64 "\"", pid, ktime);
}

static void json_opt_str(struct sbuf *b, const char *key, const char *v)
{
	sbuf_printf(b, ",\"%s\":", key);
	if (v)
		json_str(b, v, strlen(v));
	else
		sbuf_puts(b, "null");
}

void format_record_json(struct sbuf *b, const struct eg_record *r, int64_t boot_to_real,
			const struct eg_annotation *a)
{
	const struct eg_event *h = &r->h;
	bool failed = h->type == EG_EVENT_EXEC_FAILED;
	size_t i;

	format_json_open(b, failed ? "exec_failed" : "exec", h->ktime_ns + boot_to_real);
	if (failed) {
		sbuf_puts(b, ",\"exec_id\":null");
	} else {
		sbuf_puts(b, ",\"exec_id\":");
		json_exec_id(b, h->pid, h->ktime_ns);
	}
	sbuf_puts(b, ",\"parent_exec_id\":");
	if (h->flags & EG_F_PARENT_KNOWN)
		json_exec_id(b, h->parent_tgid, h->parent_ktime_ns);
	else
		sbuf_puts(b, "null");
	sbuf_printf(b, ",\"pid\":%u,\"tid\":%u,\"ppid\":%u,\"uid\":%u,\"gid\":%u,\"comm\":",
		    h->pid, h->tid, h->ppid, h->uid, h->gid);
	json_str(b, h->comm, strnlen(h->comm, sizeof(h->comm)));
	if (failed)
		sbuf_printf(b, ",\"syscall\":\"%s\",\"errno\":%d,\"error\":\"%s\"",
			    (h->flags & EG_F_EXECVEAT) ? "execveat" : "execve", -h->err,
			    errno_name(h->err));
	if (failed && (h->flags & EG_F_EXECVEAT))
		sbuf_printf(b, ",\"dirfd\":%d,\"at_flags\":%u", h->dirfd, h->at_flags);
	sbuf_puts(b, ",\"filename\":");
	json_str(b, r->filename.p, r->filename.len);
	sbuf_puts(b, ",\"cwd\":");
	json_str(b, r->cwd.p, r->cwd.len);
	sbuf_puts(b, ",\"argv\":[");
	for (i = 0; i < r->argv_kept; i++) {
		if (i)
			sbuf_putc(b, ',');
		json_str(b, r->argv[i].p, r->argv[i].len);
	}
	sbuf_printf(b, "],\"argc\":%u,\"argv_bytes\":%u,\"truncated\":%s", h->argc, h->argv_bytes,
		    r->argv_truncated ? "true" : "false");
	sbuf_printf(b, ",\"filename_truncated\":%s,\"cwd_truncated\":%s",
		    r->filename_truncated ? "true" : "false", r->cwd_truncated ? "true" : "false");
	if (h->flags & (EG_F_ARGV_FAULT | EG_F_FILENAME_FAULT | EG_F_CWD_FAULT)) {
		const char *sep = "";

		sbuf_puts(b, ",\"unreadable\":[");
		if (h->flags & EG_F_FILENAME_FAULT) {
			sbuf_puts(b, "\"filename\"");
			sep = ",";
		}
		if (h->flags & EG_F_CWD_FAULT) {
			sbuf_printf(b, "%s\"cwd\"", sep);
			sep = ",";
		}
		if (h->flags & EG_F_ARGV_FAULT)
			sbuf_printf(b, "%s\"argv\"", sep);
		sbuf_putc(b, ']');
	}
	if (h->flags & EG_F_ARGC_INEXACT)
		sbuf_puts(b, ",\"argc_inexact\":true");
	sbuf_printf(b, ",\"depth\":%d,\"session\":", h->depth);
	if (h->session)
		sbuf_printf(b, "\"s-%x\"", h->session);
	else
		sbuf_puts(b, "null");
	sbuf_printf(b, ",\"cgroup_id\":%llu", (unsigned long long)h->cgroup_id);
	if (a) {
		json_opt_str(b, "decision", a->decision);
		json_opt_str(b, "rule", a->rule);
		json_opt_str(b, "message", a->message);
		json_opt_str(b, "action", a->action);
	}
	sbuf_puts(b, "}\n");
}

void format_text_header(struct sbuf *b)
{
	sbuf_printf(b, "%-12s %-7s %-7s %-5s %-6s %s\n", "TIME", "PID", "PPID", "DEPTH", "UID", "ARGV");
}

/* Arguments as a shell would need them typed: quoted when needed, bytes escaped. */
static void text_arg(struct sbuf *b, const char *p, size_t n)
{
	bool quote = n == 0;
	size_t i;

	for (i = 0; i < n && !quote; i++)
		quote = strchr(" \t'\"\\$`|&;<>()*?[]{}!#~", p[i]) != NULL;
	if (quote)
		sbuf_putc(b, '\'');
	for (i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (c == '\'' && quote)
			sbuf_puts(b, "'\\''");
		else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8_seq_len((const unsigned char *)p + i, n - i)))
			sbuf_printf(b, "\\x%02x", c);
		else
			sbuf_putc(b, c);
	}
	if (quote)
		sbuf_putc(b, '\'');
}

void format_record_text(struct sbuf *b, const struct eg_record *r, int64_t boot_to_real,
			const struct eg_annotation *a)
{
	const struct eg_event *h = &r->h;
	uint64_t real = h->ktime_ns + boot_to_real;
	time_t sec = real / 1000000000ull;
	struct tm tm;
	size_t i;

	localtime_r(&sec, &tm);
	sbuf_printf(b, "%02d:%02d:%02d.%03u %-7u %-7u %-5d %-6u ", tm.tm_hour, tm.tm_min, tm.tm_sec,
		    (unsigned int)(real % 1000000000ull / 1000000), h->pid, h->ppid, h->depth, h->uid);
	if (h->type == EG_EVENT_EXEC_FAILED)
		sbuf_printf(b, "[%s] ", errno_name(h->err));
	if (r->argv_kept == 0)
		text_arg(b, r->filename.p, r->filename.len);
	for (i = 0; i < r->argv_kept; i++) {
		if (i)
			sbuf_putc(b, ' ');
		text_arg(b, r->argv[i].p, r->argv[i].len);
	}
	if (r->argv_truncated)
		sbuf_printf(b, " ...[%u args, %u bytes]", h->argc, h->argv_bytes);
	if (a && a->decision && strcmp(a->decision, "allow"))
		sbuf_printf(b, "  <%s%s%s>", a->action ? a->action : a->decision,
			    a->rule ? " " : "", a->rule ? a->rule : "");
	sbuf_putc(b, '\n');
}
