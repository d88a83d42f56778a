// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "events/format.h"
#include "util/json.h"
#include "util/version.h"

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
	/* "2026-01-19T14:30:00." changes once a second: format it once a second */
	static __thread uint64_t cached_sec = ~0ull;
	static __thread char prefix[80];
	uint64_t sec = real_ns / 1000000000ull;

	if (sec != cached_sec) {
		time_t t = sec;
		struct tm tm;

		gmtime_r(&t, &tm);
		snprintf(prefix, sizeof(prefix), "%04d-%02d-%02dT%02d:%02d:%02d.", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		cached_sec = sec;
	}
	sbuf_puts(b, prefix);
	sbuf_put_udigits(b, real_ns % 1000000000ull, 9);
	sbuf_putc(b, 'Z');
}

/* ENOTSUPP is the kernel's own (524), which glibc does not name. */
#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

const char *eg_errno_name(int err, char *buf, size_t size)
{
	const char *name;

	if (err < 0)
		err = -err;
	if (err == ENOTSUPP)
		return "ENOTSUPP";
	name = strerrorname_np(err);
	if (name)
		return name;
	snprintf(buf, size, "E%d", err);
	return buf;
}

const char *errno_name(int err)
{
	static __thread char buf[16];

	return eg_errno_name(err, buf, sizeof(buf));
}

void format_json_open(struct sbuf *b, const char *type, uint64_t real_ns)
{
	sbuf_puts(b, "{\"v\":");
	sbuf_put_u64(b, EG_SCHEMA_VERSION);
	sbuf_puts(b, ",\"type\":\"");
	sbuf_puts(b, type);
	sbuf_puts(b, "\",\"time\":\"");
	format_time(b, real_ns);
	sbuf_putc(b, '"');
}

static void json_exec_id(struct sbuf *b, uint32_t pid, uint64_t ktime)
{
	sbuf_putc(b, '"');
	sbuf_put_u64(b, pid);
	sbuf_putc(b, ':');
	sbuf_put_u64(b, ktime);
	sbuf_putc(b, '"');
}

static void json_opt_str(struct sbuf *b, const char *key, const char *v)
{
	sbuf_put(b, ",\"", 2);
	sbuf_puts(b, key);
	sbuf_put(b, "\":", 2);
	if (v)
		json_str(b, v, strlen(v));
	else
		sbuf_put(b, "null", 4);
}

/* ,"key":N */
static void json_u64(struct sbuf *b, const char *key, uint64_t v)
{
	sbuf_puts(b, key);
	sbuf_put_u64(b, v);
}

static void json_bool(struct sbuf *b, const char *key, bool v)
{
	sbuf_puts(b, key);
	if (v)
		sbuf_put(b, "true", 4);
	else
		sbuf_put(b, "false", 5);
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
	json_u64(b, ",\"pid\":", h->pid);
	json_u64(b, ",\"tid\":", h->tid);
	json_u64(b, ",\"ppid\":", h->ppid);
	json_u64(b, ",\"uid\":", h->uid);
	json_u64(b, ",\"gid\":", h->gid);
	sbuf_puts(b, ",\"comm\":");
	json_str(b, h->comm, strnlen(h->comm, sizeof(h->comm)));
	if (failed) {
		sbuf_puts(b, (h->flags & EG_F_EXECVEAT) ? ",\"syscall\":\"execveat\"" : ",\"syscall\":\"execve\"");
		json_u64(b, ",\"errno\":", -(int64_t)h->err);
		sbuf_puts(b, ",\"error\":\"");
		sbuf_puts(b, errno_name(h->err));
		sbuf_putc(b, '"');
		if (h->flags & EG_F_EXECVEAT) {
			sbuf_puts(b, ",\"dirfd\":");
			sbuf_put_i64(b, h->dirfd);
			json_u64(b, ",\"at_flags\":", h->at_flags);
		}
	}
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
	json_u64(b, "],\"argc\":", h->argc);
	json_u64(b, ",\"argv_bytes\":", h->argv_bytes);
	json_bool(b, ",\"truncated\":", r->argv_truncated);
	json_bool(b, ",\"filename_truncated\":", r->filename_truncated);
	json_bool(b, ",\"cwd_truncated\":", r->cwd_truncated);
	if (h->flags & (EG_F_ARGV_FAULT | EG_F_FILENAME_FAULT | EG_F_CWD_FAULT)) {
		const char *sep = "";

		sbuf_puts(b, ",\"unreadable\":[");
		if (h->flags & EG_F_FILENAME_FAULT) {
			sbuf_puts(b, "\"filename\"");
			sep = ",";
		}
		if (h->flags & EG_F_CWD_FAULT) {
			sbuf_puts(b, sep);
			sbuf_puts(b, "\"cwd\"");
			sep = ",";
		}
		if (h->flags & EG_F_ARGV_FAULT) {
			sbuf_puts(b, sep);
			sbuf_puts(b, "\"argv\"");
		}
		sbuf_putc(b, ']');
	}
	if (h->flags & EG_F_ARGC_INEXACT)
		sbuf_puts(b, ",\"argc_inexact\":true");
	sbuf_puts(b, ",\"depth\":");
	sbuf_put_i64(b, h->depth);
	if (h->session)
		sbuf_printf(b, ",\"session\":\"s-%x\"", h->session);
	else
		sbuf_puts(b, ",\"session\":null");
	json_u64(b, ",\"cgroup_id\":", h->cgroup_id);
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
