// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "events/format.h"
#include "policy/policy.h"
#include "events/lineage.h"
#include "trace/cgroups.h"
#include "trace/containers.h"
#include "util/severity.h"
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

void format_exec_id(struct sbuf *b, uint32_t pid, uint64_t ktime)
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

struct eg_str record_program(const struct eg_record *r)
{
	if (r->h.type == EG_EVENT_EXEC && (r->h.flags & EG_F_SCRIPT) && r->script.len)
		return r->script;
	return r->filename;
}

bool record_filename_truncated(const struct eg_record *r)
{
	if (r->h.type == EG_EVENT_EXEC && (r->h.flags & EG_F_SCRIPT) && r->script.len)
		return r->script_truncated;
	return r->filename_truncated;
}

bool record_user_mount(const struct eg_record *r)
{
	if (r->h.type == EG_EVENT_EXEC && (r->h.flags & EG_F_SCRIPT))
		return r->script.len && (r->h.flags2 & EG_F2_SCRIPT_USER_MOUNT);
	return r->h.flags2 & EG_F2_USER_MOUNT;
}

static bool fd_path(const char *p, size_t n)
{
	size_t i = 0;

	if (n > 8 && !memcmp(p, "/dev/fd/", 8))
		i = 8;
	else if (n > 14 && !memcmp(p, "/proc/self/fd/", 14))
		i = 14;
	else
		return false;
	if (i >= n || p[i] < '0' || p[i] > '9')
		return false;
	while (i < n && p[i] >= '0' && p[i] <= '9')
		i++;
	return i == n;
}

bool record_exec_fd(const struct eg_record *r)
{
	const struct eg_str *s = r->h.type == EG_EVENT_EXEC ? &r->requested : &r->filename;

	if ((r->h.flags & EG_F_EXECVEAT) && (r->h.at_flags & 0x1000 /* AT_EMPTY_PATH */))
		return true;
	return fd_path(s->p, s->len);
}

static void json_str_field(struct sbuf *b, const char *key, const struct eg_str *s)
{
	sbuf_puts(b, key);
	json_str(b, s->p, s->len);
}

/* "dev":"MAJOR:MINOR","ino":N, after a ',' unless first */
static void json_dev_ino(struct sbuf *b, uint64_t dev, uint64_t ino, bool first)
{
	sbuf_puts(b, first ? "\"dev\":\"" : ",\"dev\":\"");
	sbuf_put_u64(b, dev >> 20);
	sbuf_putc(b, ':');
	sbuf_put_u64(b, dev & 0xfffff);
	json_u64(b, "\",\"ino\":", ino);
}

static void json_opt_cstr(struct sbuf *b, const char *key, const char *v, bool comma)
{
	if (comma)
		sbuf_putc(b, ',');
	sbuf_putc(b, '"');
	sbuf_puts(b, key);
	sbuf_put(b, "\":", 2);
	if (v)
		json_str(b, v, strlen(v));
	else
		sbuf_put(b, "null", 4);
}

void format_container_json(struct sbuf *b, const struct eg_format_ctx *fc, uint64_t cgroup_id,
			   const char *cg)
{
	const struct eg_container_info *ci;
	struct eg_container ct;

	if (!cg)
		return;
	if (!fc->containers) {
		if (cgroup_container(cg, &ct))
			return;
		sbuf_puts(b, ",\"container\":{");
		json_opt_cstr(b, "id", ct.id, false);
		json_opt_cstr(b, "runtime", ct.runtime, true);
		if (ct.pod_uid[0])
			json_opt_cstr(b, "pod_uid", ct.pod_uid, true);
		sbuf_putc(b, '}');
		return;
	}
	ci = containers_get(fc->containers, cgroup_id, cg);
	if (!ci)
		return;
	sbuf_puts(b, ",\"container\":{");
	json_opt_cstr(b, "id", ci->id, false);
	json_opt_cstr(b, "runtime", ci->runtime, true);
	json_opt_cstr(b, "name", ci->name, true);
	json_opt_cstr(b, "image", ci->image, true);
	if (ci->pod_uid)
		json_opt_cstr(b, "pod_uid", ci->pod_uid, true);
	sbuf_putc(b, '}');
	if (ci->pod_name || ci->pod_namespace || ci->pod_uid) {
		sbuf_puts(b, ",\"pod\":{");
		json_opt_cstr(b, "name", ci->pod_name, false);
		json_opt_cstr(b, "namespace", ci->pod_namespace, true);
		json_opt_cstr(b, "uid", ci->pod_uid, true);
		sbuf_putc(b, '}');
	}
}

/* "parent":{exec_id, filename, comm} from the recent execs; null names when it is not among them */
static void format_parent(struct sbuf *b, const struct eg_lineage *l, const struct eg_event *h)
{
	const struct eg_lineage_entry *e;

	if (!(h->flags & EG_F_PARENT_KNOWN)) {
		sbuf_puts(b, ",\"parent\":null");
		return;
	}
	e = lineage_get(l, h->parent_tgid, h->parent_ktime_ns);
	sbuf_puts(b, ",\"parent\":{\"exec_id\":");
	format_exec_id(b, h->parent_tgid, h->parent_ktime_ns);
	sbuf_puts(b, ",\"filename\":");
	if (e)
		json_str(b, e->filename, e->filename_len);
	else
		sbuf_puts(b, "null");
	sbuf_puts(b, ",\"comm\":");
	if (e)
		json_str(b, e->comm, strnlen(e->comm, sizeof(e->comm)));
	else
		sbuf_puts(b, "null");
	sbuf_putc(b, '}');
}

/*
 * The verdict's part of an exec record, from "decision" on: the one writer
 * of these fields for the kernel's records and a supervisor's refusals
 * alike. h: the kernel's record (its rule and sequence under "kernel"), or
 * NULL.
 */
void format_annotation_json(struct sbuf *b, const struct eg_annotation *a, const struct eg_event *h)
{
	size_t i;

	json_opt_str(b, "decision", a->decision);
	json_opt_str(b, "rule", a->rule);
	json_opt_str(b, "message", a->message);
	json_opt_str(b, "action", a->action);
	if (a->layer)
		json_opt_str(b, "layer", a->layer);
	if (a->reason)
		json_opt_str(b, "reason", a->reason);
	if (a->n_programs > 1) {
		sbuf_puts(b, ",\"programs\":[");
		for (i = 0; i < a->n_programs; i++) {
			const struct eg_program_verdict *pv = &a->programs[i];

			sbuf_puts(b, i ? ",{\"role\":" : "{\"role\":");
			json_str(b, pv->role, strlen(pv->role));
			json_str_field(b, ",\"filename\":", &pv->filename);
			json_opt_str(b, "decision", pv->decision);
			json_opt_str(b, "rule", pv->rule);
			sbuf_putc(b, '}');
		}
		sbuf_putc(b, ']');
	}
	if (a->severity)
		json_opt_str(b, "severity", eg_severity_name(a->severity));
	if (a->ntags) {
		sbuf_puts(b, ",\"tags\":[");
		for (i = 0; i < a->ntags; i++) {
			if (i)
				sbuf_putc(b, ',');
			json_str(b, a->tags[i], strlen(a->tags[i]));
		}
		sbuf_putc(b, ']');
	}
	if (a->redirect && a->redirect->command) {
		/* a redirect's target (policy/README.md, Redirects) */
		sbuf_puts(b, ",\"redirect_to\":{\"command\":");
		json_str(b, a->redirect->command, strlen(a->redirect->command));
		sbuf_puts(b, ",\"args\":[");
		for (i = 0; i < a->redirect->n_args; i++) {
			if (i)
				sbuf_putc(b, ',');
			json_str(b, a->redirect->args[i], strlen(a->redirect->args[i]));
		}
		sbuf_puts(b, "]}");
	}
	if (a->kernel_layer) {
		sbuf_puts(b, ",\"kernel\":{");
		sbuf_puts(b, "\"layer\":");
		json_str(b, a->kernel_layer, strlen(a->kernel_layer));
		json_opt_str(b, "decision", a->kernel_decision);
		json_opt_str(b, "rule", a->kernel_rule);
		/* the rule by its place in the policy, and which loaded rules judged */
		if (h && h->krule)
			json_u64(b, ",\"rule_index\":", h->krule - 1);
		json_u64(b, ",\"seq\":", h ? h->kseq : 0);
		sbuf_putc(b, '}');
	}
}

void format_record_json(struct sbuf *b, const struct eg_record *r, const struct eg_format_ctx *fc,
			const struct eg_annotation *a)
{
	const struct eg_event *h = &r->h;
	bool failed = h->type == EG_EVENT_EXEC_FAILED, loaded = h->type == EG_EVENT_LOADED;
	struct eg_str prog = record_program(r);
	size_t i;

	/* "loaded": the program a loader mapped, when its exec went out without it (events.md) */
	format_json_open(b, failed ? "exec_failed" : loaded ? "loaded" : "exec", h->ktime_ns + fc->boot_to_real);
	if (failed) {
		sbuf_puts(b, ",\"exec_id\":null");
	} else {
		sbuf_puts(b, ",\"exec_id\":");
		format_exec_id(b, h->pid, h->ktime_ns);
	}
	sbuf_puts(b, ",\"parent_exec_id\":");
	if (h->flags & EG_F_PARENT_KNOWN)
		format_exec_id(b, h->parent_tgid, h->parent_ktime_ns);
	else
		sbuf_puts(b, "null");
	if (fc->lineage)
		format_parent(b, fc->lineage, h);
	json_u64(b, ",\"pid\":", h->pid);
	json_u64(b, ",\"tid\":", h->tid);
	json_u64(b, ",\"ppid\":", h->ppid);
	if (h->ns_pid && h->ns_pid != h->pid)
		json_u64(b, ",\"ns_pid\":", h->ns_pid);
	json_u64(b, ",\"uid\":", h->uid);
	json_u64(b, ",\"euid\":", h->euid);
	json_u64(b, ",\"gid\":", h->gid);
	json_u64(b, ",\"egid\":", h->egid);
	if (h->auid == EG_AUID_UNSET)
		sbuf_puts(b, ",\"auid\":null");
	else
		json_u64(b, ",\"auid\":", h->auid);
	sbuf_puts(b, ",\"tty\":");
	if (h->tty[0])
		json_str(b, h->tty, strnlen(h->tty, sizeof(h->tty)));
	else
		sbuf_puts(b, "null");
	json_bool(b, ",\"secureexec\":", h->flags & EG_F_SECUREEXEC);
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
		json_str_field(b, ",\"filename\":", &r->filename);
		json_str_field(b, ",\"path_requested\":", &r->filename);
	} else {
		json_str_field(b, ",\"filename\":", &prog);
		json_str_field(b, ",\"path_requested\":", &r->requested);
		if (h->flags & EG_F_SCRIPT) {
			json_str_field(b, ",\"interpreter\":", &r->filename);
			json_str_field(b, ",\"interpreter_requested\":", &r->interp);
			if (!r->script.len)
				sbuf_puts(b, ",\"script_resolved\":false");
		}
		if (r->chain_n) {
			/* the scripts between the first and the interpreter, outermost first */
			sbuf_puts(b, ",\"script_chain\":[");
			for (i = 0; i < r->chain_n; i++) {
				if (i)
					sbuf_putc(b, ',');
				json_str(b, r->chain[i].path.p, r->chain[i].path.len);
			}
			sbuf_putc(b, ']');
		}
		if (h->flags & EG_F_CHAIN_CUT)
			sbuf_puts(b, ",\"script_chain_cut\":true");
		/* paths that keep only their last components (deeper than 64 levels, longer than 4 KiB) */
		if (r->requested_truncated)
			sbuf_puts(b, ",\"path_requested_truncated\":true");
		if ((h->flags & EG_F_SCRIPT) && r->filename_truncated)
			sbuf_puts(b, ",\"interpreter_truncated\":true");
		if (r->chain_truncated)
			sbuf_puts(b, ",\"script_chain_truncated\":true");
		/* a path through a mount a user made: no allow by path trusts it */
		if (record_user_mount(r))
			sbuf_puts(b, ",\"user_mount\":true");
		if ((h->flags & EG_F_SCRIPT) && (h->flags2 & EG_F2_USER_MOUNT))
			sbuf_puts(b, ",\"interpreter_user_mount\":true");
		for (i = 0; i < r->chain_n && !(r->chain[i].flags & EG_CE_USER_MOUNT); i++)
			;
		if (i < r->chain_n)
			sbuf_puts(b, ",\"script_chain_user_mount\":true");
		json_dev_ino(b, h->dev, h->ino, false);
		if (h->flags & EG_F_BACKING) {
			sbuf_puts(b, ",\"backing\":{");
			json_dev_ino(b, h->backing_dev, h->backing_ino, true);
			sbuf_putc(b, '}');
		}
		if (h->flags2 & EG_F2_BACKING_UNKNOWN)
			sbuf_puts(b, ",\"backing_unknown\":true");
		if ((h->flags & EG_F_LOADER) && (h->flags2 & EG_F2_LOADER_32))
			sbuf_puts(b, ",\"loader_32bit\":true");
		if (h->flags & EG_F_ANON_FILE)
			sbuf_puts(b, ",\"file_kind\":\"anonymous\"");
		if (h->flags & EG_F_LOADER) {
			sbuf_puts(b, ",\"loader\":true,\"loaded\":");
			if (r->loaded) {
				const struct eg_record *l = r->loaded;

				sbuf_putc(b, '{');
				json_str_field(b, "\"filename\":", &l->filename);
				json_str_field(b, ",\"path_requested\":", &l->requested);
				json_dev_ino(b, l->h.dev, l->h.ino, false);
				if (l->h.flags2 & EG_F2_USER_MOUNT)
					sbuf_puts(b, ",\"user_mount\":true");
				sbuf_putc(b, '}');
			} else {
				sbuf_puts(b, "null");
			}
		}
	}
	if (record_exec_fd(r))
		sbuf_puts(b, ",\"exec_fd\":true");
	if (!loaded) {
		json_str_field(b, ",\"cwd\":", &r->cwd);
		sbuf_puts(b, ",\"argv\":[");
		for (i = 0; i < r->argv_kept; i++) {
			if (i)
				sbuf_putc(b, ',');
			json_str(b, r->argv[i].p, r->argv[i].len);
		}
		json_u64(b, "],\"argc\":", h->argc);
		json_u64(b, ",\"argv_bytes\":", h->argv_bytes);
		json_bool(b, ",\"truncated\":", r->argv_truncated);
	}
	/* of "filename": the script's own path where it is the script */
	json_bool(b, ",\"filename_truncated\":", record_filename_truncated(r));
	if (!loaded)
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
	json_bool(b, ",\"depth_known\":", h->flags & EG_F_DEPTH_KNOWN);
	if (h->flags & EG_F_DEPTH_INFERRED)
		sbuf_puts(b, ",\"depth_inferred\":true");
	sbuf_puts(b, ",\"session_depth\":");
	if (h->session && (h->flags & EG_F_SESSION_DEPTH))
		sbuf_put_i64(b, h->session_depth);
	else
		sbuf_puts(b, "null");
	if (h->flags & EG_F_CONTAINER) {
		sbuf_puts(b, ",\"container_depth\":");
		sbuf_put_i64(b, h->container_depth);
	}
	/* the agent context: its name, the depth from its identity and that exec (none when inferred) */
	if (h->context) {
		sbuf_puts(b, ",\"context\":{\"name\":");
		if (a && a->context)
			json_str(b, a->context, strlen(a->context));
		else
			sbuf_puts(b, "null");
		sbuf_puts(b, ",\"depth\":");
		sbuf_put_i64(b, h->context_depth);
		if (h->context_ktime) {
			sbuf_puts(b, ",\"identity_exec_id\":");
			format_exec_id(b, h->context_tgid, h->context_ktime);
		} else
			sbuf_puts(b, ",\"identity_exec_id\":null,\"inferred\":true");
		sbuf_putc(b, '}');
	} else {
		sbuf_puts(b, ",\"context\":null");
	}
	if (h->session) {
		sbuf_puts(b, ",\"session\":\"s-");
		sbuf_printf(b, "%x", h->session);
		sbuf_putc(b, '"');
	} else {
		sbuf_puts(b, ",\"session\":null");
	}
	json_u64(b, ",\"cgroup_id\":", h->cgroup_id);
	if (fc->cgroups) {
		const char *cg = cgroup_cache_path(fc->cgroups, h->cgroup_id);

		json_opt_str(b, "cgroup", cg);
		format_container_json(b, fc, h->cgroup_id, cg);
	}
	if (fc->path_search && !failed) {
		const struct eg_path_search *ps = fc->path_search;

		json_u64(b, ",\"path_search\":{\"failed\":", ps->failed);
		sbuf_puts(b, ",\"dirs\":[");
		for (i = 0; i < ps->ndirs; i++) {
			if (i)
				sbuf_putc(b, ',');
			json_str(b, ps->dirs[i].p, ps->dirs[i].len);
		}
		sbuf_puts(b, "]}");
	}
	json_u64(b, ",\"mnt_ns\":", h->mnt_ns);
	json_u64(b, ",\"pid_ns\":", h->pid_ns);
	if ((fc->host_mnt_ns && h->mnt_ns != fc->host_mnt_ns) ||
	    (fc->host_pid_ns && h->pid_ns != fc->host_pid_ns))
		sbuf_puts(b, ",\"foreign_ns\":true");
	if (a)
		format_annotation_json(b, a, h);
	sbuf_puts(b, "}\n");
}

void format_text_header(struct sbuf *b, unsigned int width)
{
	size_t start = b->len;

	sbuf_printf(b, "%-23s %-7s %-7s %-5s %-8s %-22s %s", "TIME", "PID", "PPID", "DEPTH", "USER",
		    "BINARY", "ARGV");
	format_text_fit(b, start, width);
	sbuf_putc(b, '\n');
}

/* uid -> name for the table, cached (NSS lookups are slow). */
const char *format_user_name(uint32_t uid, char *buf, size_t len)
{
	static __thread struct { uint32_t uid; char name[33]; bool set; } cache[64];
	unsigned int slot = uid % 64;
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (cache[slot].set && cache[slot].uid == uid)
		return cache[slot].name;
	if (!getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) && res)
		snprintf(cache[slot].name, sizeof(cache[slot].name), "%s", pw.pw_name);
	else
		snprintf(cache[slot].name, sizeof(cache[slot].name), "%u", uid);
	cache[slot].uid = uid;
	cache[slot].set = true;
	snprintf(buf, len, "%s", cache[slot].name);
	return cache[slot].name;
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
		size_t l;

		if (c == '\'' && quote) {
			sbuf_puts(b, "'\\''");
		} else if (c < 0x20 || c == 0x7f) {
			sbuf_printf(b, "\\x%02x", c);
		} else if (c >= 0x80) {
			/* a valid sequence goes whole; a C1 control (U+0080-U+009F) is unprintable too */
			l = utf8_seq_len((const unsigned char *)p + i, n - i);
			if (l && !(c == 0xc2 && (unsigned char)p[i + 1] < 0xa0)) {
				sbuf_put(b, p + i, l);
				i += l - 1;
			} else {
				sbuf_printf(b, "\\x%02x", c);
			}
		} else {
			sbuf_putc(b, c);
		}
	}
	if (quote)
		sbuf_putc(b, '\'');
}

/* Display columns of s[0..n) as UTF-8 (one per code point; enough for a table). */
static size_t columns(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

void format_record_text(struct sbuf *b, const struct eg_record *r, const struct eg_format_ctx *fc,
			const struct eg_annotation *a)
{
	const struct eg_event *h = &r->h;
	uint64_t real = h->ktime_ns + fc->boot_to_real;
	time_t sec = real / 1000000000ull;
	struct eg_str prog = record_program(r);
	size_t start = b->len, i;
	char name[40];
	struct tm tm;

	localtime_r(&sec, &tm);
	sbuf_printf(b, "%04d-%02d-%02d %02d:%02d:%02d.%03u %-7u %-7u %-5d %-8.8s ", tm.tm_year + 1900,
		    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		    (unsigned int)(real % 1000000000ull / 1000000), h->pid, h->ppid, h->depth,
		    format_user_name(h->euid, name, sizeof(name)));
	/* the binary that runs, resolved (the ARGV shows how it was called) */
	if (prog.len > 22) {
		sbuf_puts(b, "...");
		text_arg(b, prog.p + prog.len - 19, 19);
	} else {
		text_arg(b, prog.p, prog.len);
		for (i = prog.len; i < 22; i++)
			sbuf_putc(b, ' ');
	}
	sbuf_putc(b, ' ');
	if (h->type == EG_EVENT_EXEC_FAILED)
		sbuf_printf(b, "[%s] ", errno_name(h->err));
	else if (fc->path_search)
		sbuf_printf(b, "[PATH +%u] ", fc->path_search->failed);
	if (a && a->decision && strcmp(a->decision, "allow"))
		sbuf_printf(b, "<%s%s%s> ", a->action ? a->action : a->decision,
			    a->rule ? " " : "", a->rule ? a->rule : "");
	if (r->argv_kept == 0)
		text_arg(b, r->filename.p, r->filename.len);
	for (i = 0; i < r->argv_kept; i++) {
		if (i)
			sbuf_putc(b, ' ');
		text_arg(b, r->argv[i].p, r->argv[i].len);
		if (fc->width && columns(b->data + start, b->len - start) > fc->width)
			break;
	}
	if (r->argv_truncated)
		sbuf_printf(b, " ...[%u args, %u bytes]", h->argc, h->argv_bytes);
	/* one line a record: cut at the terminal's width, with a marker */
	format_text_fit(b, start, fc->width);
	sbuf_putc(b, '\n');
}

void format_text_fit(struct sbuf *b, size_t start, unsigned int width)
{
	size_t keep = start, c = 0;

	if (!width || columns(b->data + start, b->len - start) <= width)
		return;
	while (keep < b->len && c < width - 1) {
		keep++;
		while (keep < b->len && ((unsigned char)b->data[keep] & 0xc0) == 0x80)
			keep++;
		c++;
	}
	b->len = keep;
	sbuf_putc(b, '+');
}
