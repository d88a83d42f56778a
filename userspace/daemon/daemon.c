// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate daemon: load the tracer, pin its maps, turn ring-buffer records
 * into JSON lines (or a table on a terminal), report every lost record.
 *
 * Batching is the whole performance story (DESIGN.md, "Performance notes"):
 * the BPF side submits without waking us, we drain on a short timer or when
 * the ring passes a fill threshold, and write the output in large chunks.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "trace/cgroups.h"
#include "cli/commands.h"
#include "execgate.h"
#include "execgate.skel.h"
#include "events/format.h"
#include "util/json.h"
#include "util/log.h"
#include "util/mounts.h"
#include "util/pidfile.h"
#include "policy/policy.h"
#include "trace/probe.h"
#include "trace/record.h"
#include "trace/tracer.h"
#include "util/units.h"
#include "util/version.h"

#define DRAIN_INTERVAL_MS	100
#define FLUSH_BYTES		(1 << 20)

enum out_format { FMT_AUTO, FMT_JSON, FMT_TEXT };

struct daemon_opts {
	const char *output;		/* NULL or "-": stdout */
	const char *pin_path;
	const char *cgroup;
	const char *policy_path;
	uint32_t max_argv_bytes;
	uint32_t ringbuf_size;
	enum out_format format;
};

struct daemon {
	struct daemon_opts o;
	struct execgate_bpf *skel;
	struct ring_buffer *rb;
	struct eg_decoder dec;
	struct sbuf out;
	int out_fd;
	bool text;
	bool write_failed;
	int64_t boot_to_real;
	uint64_t written_exec, written_failed, malformed;
	uint64_t lost_reported;
	struct eg_mode mode;
	/* policy annotation (audit mode: nothing enforced by this daemon yet) */
	struct eg_policy *policy;
	struct cgroup_cache *cgroups;
	const char **argvp;
	size_t argvp_cap;
	struct sbuf fname;
};

static const char doc[] =
"Trace every execve/execveat on this host and write one event per line.\n"
"\n"
"Events are JSON lines (schema v1, docs/events.md) when the output is a file\n"
"or a pipe, a readable table when it is a terminal. The first record says how\n"
"the daemon runs; SIGINT/SIGTERM drain the ring buffer, write a stop record\n"
"and exit 0; SIGHUP reopens --output (for logrotate). Maps are pinned under\n"
"--pin-path for bpftool and 'execgate stats' (docs/maps.md). With --policy,\n"
"every event carries the policy's decision; SIGHUP or 'execgate policy\n"
"reload' re-reads the file (a file that fails to load leaves the old policy).";

enum {
	OPT_PIN_PATH = 0x100,
	OPT_MAX_ARGV,
	OPT_RINGBUF,
	OPT_FORMAT,
	OPT_CGROUP,
	OPT_POLICY,
};

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0, "Append events to FILE (default: stdout)", 0 },
	{ "pin-path", OPT_PIN_PATH, "DIR", 0, "Pin maps under DIR (default " EG_PIN_PATH_DEFAULT ")", 0 },
	{ "max-argv-bytes", OPT_MAX_ARGV, "N", 0,
	  "Bytes of argv kept per exec (default 65536, up to 2097152); longer argv is cut at an argument boundary and flagged", 0 },
	{ "ringbuf-size", OPT_RINGBUF, "BYTES", 0,
	  "Ring buffer size, a power of two >= 4096, suffix K/M allowed (default 16M)", 0 },
	{ "format", OPT_FORMAT, "json|text", 0, "Output format (default: text on a terminal, else json)", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Only report tasks in this cgroup v2 directory or below", 0 },
	{ "policy", OPT_POLICY, "FILE", 0, "Annotate every event with this policy's decision (policy/README.md)", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf debug output", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct daemon_opts *o = state->input;
	uint64_t v;

	switch (key) {
	case 'o':
		o->output = arg;
		break;
	case OPT_PIN_PATH:
		if (arg[0] != '/')
			argp_error(state, "--pin-path must be an absolute path");
		o->pin_path = arg;
		break;
	case OPT_MAX_ARGV:
		if (parse_size(arg, &v) || v < 16 || v > EG_ARGV_LIMIT)
			argp_error(state, "--max-argv-bytes must be between 16 and %d", EG_ARGV_LIMIT);
		o->max_argv_bytes = v;
		break;
	case OPT_RINGBUF:
		if (parse_size(arg, &v) || v < 4096 || v > (1u << 30) || (v & (v - 1)))
			argp_error(state, "--ringbuf-size must be a power of two between 4096 and 1G");
		o->ringbuf_size = v;
		break;
	case OPT_FORMAT:
		if (!strcmp(arg, "json"))
			o->format = FMT_JSON;
		else if (!strcmp(arg, "text"))
			o->format = FMT_TEXT;
		else
			argp_error(state, "--format is json or text");
		break;
	case OPT_CGROUP:
		o->cgroup = arg;
		break;
	case OPT_POLICY:
		o->policy_path = arg;
		break;
	case 'v':
		eg_verbose = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}


/* ---- output ------------------------------------------------------------- */

static int open_output(const char *path)
{
	if (!path || !strcmp(path, "-"))
		return fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

static int flush_out(struct daemon *d)
{
	size_t off = 0;

	if (d->out.oom) {
		p_err("out of memory buffering events");
		d->write_failed = true;
	}
	while (off < d->out.len && !d->write_failed) {
		ssize_t n = write(d->out_fd, d->out.data + off, d->out.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			p_err("writing events to %s failed: %s; stopping",
			      d->o.output ? d->o.output : "stdout", n < 0 ? strerror(errno) : "short write");
			d->write_failed = true;
			break;
		}
		off += n;
	}
	sbuf_reset(&d->out);
	return d->write_failed ? -EIO : 0;
}

/* Text mode shows daemon and lost records as comment lines. */
static void emit_meta_text(struct daemon *d, const char *line)
{
	sbuf_printf(&d->out, "# %s\n", line);
}

/* ---- policy ------------------------------------------------------------- */

/* What happened, while no enforcement layer covers the task. */
static const char *audit_action(enum eg_decision dec)
{
	switch (dec) {
	case EG_DECISION_DENY: return "would-block";
	case EG_DECISION_APPROVAL: return "would-ask";
	case EG_DECISION_AUDIT: return "audited";
	default: return "allowed";
	}
}

static bool annotate(struct daemon *d, const struct eg_record *r, struct eg_annotation *a)
{
	struct eg_exec_req req = {};
	struct eg_verdict v;
	size_t i;

	if (!d->policy)
		return false;
	if (r->argv_kept + 1 > d->argvp_cap) {
		size_t cap = r->argv_kept + 64;
		const char **p = realloc(d->argvp, cap * sizeof(*p));

		if (!p) {
			/* cannot evaluate: say so rather than guess */
			*a = (struct eg_annotation){ "deny", "internal_error", "out of memory", "would-block" };
			return true;
		}
		d->argvp = p;
		d->argvp_cap = cap;
	}
	/* kept arguments are NUL terminated in the record itself */
	for (i = 0; i < r->argv_kept; i++)
		d->argvp[i] = r->argv[i].p;
	d->argvp[i] = NULL;
	sbuf_reset(&d->fname);
	sbuf_put(&d->fname, r->filename.p, r->filename.len);
	req.filename = sbuf_cstr(&d->fname);
	req.argv = d->argvp;
	req.argc = r->argv_kept;
	req.depth = r->h.depth;
	req.cgroup = cgroup_cache_path(d->cgroups, r->h.cgroup_id);
	req.uid = r->h.uid;
	req.truncated = r->argv_truncated || r->filename_truncated ||
			(r->h.flags & (EG_F_ARGV_FAULT | EG_F_FILENAME_FAULT));
	policy_eval(d->policy, &req, &v);
	a->decision = eg_decision_name(v.decision);
	a->rule = v.rule;
	a->message = v.message;
	a->action = audit_action(v.decision);
	return true;
}

static void diag_lines(const struct eg_diags *diags, bool errors_only, void (*out)(const char *, void *),
		       void *arg)
{
	char line[1024];
	size_t i;

	for (i = 0; i < diags->n; i++) {
		if (errors_only && diags->v[i].warning)
			continue;
		eg_diag_format(&diags->v[i], line, sizeof(line));
		out(line, arg);
	}
}

static void print_diag(const char *line, void *arg)
{
	(void)arg;
	fprintf(stderr, "%s\n", line);
}

static void json_diag(const char *line, void *arg)
{
	struct sbuf *b = arg;

	if (b->data[b->len - 1] != '[')
		sbuf_putc(b, ',');
	json_str(b, line, strlen(line));
}

static void emit_policy(struct daemon *d, bool reload)
{
	if (d->text) {
		char line[PATH_MAX + 200];

		snprintf(line, sizeof(line), "policy %s%s: %zu rules, sha256 %s",
			 d->o.policy_path, reload ? " reloaded" : "", policy_rule_count(d->policy),
			 policy_sha256(d->policy));
		emit_meta_text(d, line);
		return;
	}
	format_json_open(&d->out, "daemon", clock_real_ns());
	sbuf_puts(&d->out, ",\"event\":\"policy\",\"path\":");
	json_str(&d->out, d->o.policy_path, strlen(d->o.policy_path));
	sbuf_printf(&d->out, ",\"sha256\":\"%s\",\"rules\":%zu,\"reload\":%s}\n",
		    policy_sha256(d->policy), policy_rule_count(d->policy), reload ? "true" : "false");
}

/* SIGHUP: the new policy replaces the old only if it loads. */
static void reload_policy(struct daemon *d)
{
	struct eg_diags diags = {};
	struct eg_policy *p = NULL;
	int err;

	if (!d->o.policy_path)
		return;
	err = policy_load_file(d->o.policy_path, &p, &diags);
	if (err) {
		p_warn("policy reload failed, keeping the previous policy:");
		diag_lines(&diags, true, print_diag, NULL);
		if (d->text) {
			emit_meta_text(d, "policy reload failed; the previous policy stays in force");
		} else {
			format_json_open(&d->out, "daemon", clock_real_ns());
			sbuf_puts(&d->out, ",\"event\":\"policy_error\",\"path\":");
			json_str(&d->out, d->o.policy_path, strlen(d->o.policy_path));
			sbuf_printf(&d->out, ",\"kept_sha256\":\"%s\",\"errors\":[",
				    policy_sha256(d->policy));
			diag_lines(&diags, true, json_diag, &d->out);
			sbuf_puts(&d->out, "]}\n");
		}
	} else {
		policy_free(d->policy);
		d->policy = p;
		emit_policy(d, true);
	}
	eg_diags_free(&diags);
}

/* ---- records ------------------------------------------------------------ */

static int on_record(void *ctx, void *data, size_t size)
{
	struct daemon *d = ctx;
	struct eg_annotation a, *ap;
	struct eg_record r;

	if (record_decode(&d->dec, data, size, &r)) {
		d->malformed++;
		return 0;
	}
	ap = annotate(d, &r, &a) ? &a : NULL;
	if (d->text)
		format_record_text(&d->out, &r, d->boot_to_real, ap);
	else
		format_record_json(&d->out, &r, d->boot_to_real, ap);
	if (r.h.type == EG_EVENT_EXEC)
		d->written_exec++;
	else
		d->written_failed++;
	if (d->out.len >= FLUSH_BYTES)
		flush_out(d);
	return 0;
}

static void report_lost(struct daemon *d)
{
	struct eg_counters c;
	uint64_t lost;

	if (tracer_read_counters(bpf_map__fd(d->skel->maps.counters), &c))
		return;
	lost = c.lost_exec + c.lost_exec_failed;
	if (lost <= d->lost_reported)
		return;
	if (d->text) {
		char line[128];

		snprintf(line, sizeof(line), "lost %" PRIu64 " records (ring buffer full), %" PRIu64 " in all",
			 lost - d->lost_reported, lost);
		emit_meta_text(d, line);
	} else {
		format_json_open(&d->out, "lost", clock_real_ns());
		sbuf_printf(&d->out, ",\"count\":%" PRIu64 ",\"total\":%" PRIu64
			    ",\"exec\":%llu,\"exec_failed\":%llu}\n",
			    lost - d->lost_reported, lost, (unsigned long long)c.lost_exec,
			    (unsigned long long)c.lost_exec_failed);
	}
	d->lost_reported = lost;
}

/*
 * One batch while running (producers never starve the signal handling), or
 * everything queued once the programs are detached.
 */
static void drain(struct daemon *d, bool until_empty)
{
	d->boot_to_real = clock_boot_to_real();
	while (ring_buffer__consume(d->rb) > 0 && until_empty)
		;
	report_lost(d);
	flush_out(d);
}

/* ---- daemon records ----------------------------------------------------- */

static void emit_start(struct daemon *d)
{
	if (d->text) {
		char line[512];

		snprintf(line, sizeof(line),
			 "execgate %s started: tracer=%s kernel_enforcement=%s session_enforcement=%s, maps in %s",
			 EG_VERSION, d->mode.tracer, d->mode.kernel_enforcement,
			 d->mode.session_enforcement, d->o.pin_path);
		emit_meta_text(d, line);
		if (d->policy)
			emit_policy(d, false);
		format_text_header(&d->out);
		return;
	}
	format_json_open(&d->out, "daemon", clock_real_ns());
	sbuf_printf(&d->out, ",\"event\":\"start\",\"version\":\"%s\",\"pid\":%d", EG_VERSION,
		    (int)getpid());
	sbuf_printf(&d->out, ",\"mode\":{\"tracer\":\"%s\",\"kernel_enforcement\":\"%s\","
		    "\"session_enforcement\":\"%s\"}", d->mode.tracer, d->mode.kernel_enforcement,
		    d->mode.session_enforcement);
	sbuf_puts(&d->out, ",\"features_used\":[\"tp_btf\",\"task_storage\",\"ringbuf\",\"tracepoint\"]");
	sbuf_puts(&d->out, ",\"pin_path\":");
	json_str(&d->out, d->o.pin_path, strlen(d->o.pin_path));
	sbuf_printf(&d->out, ",\"max_argv_bytes\":%u,\"ringbuf_size\":%u", d->o.max_argv_bytes,
		    d->o.ringbuf_size);
	sbuf_puts(&d->out, ",\"cgroup\":");
	if (d->o.cgroup)
		json_str(&d->out, d->o.cgroup, strlen(d->o.cgroup));
	else
		sbuf_puts(&d->out, "null");
	sbuf_puts(&d->out, ",\"policy\":");
	if (d->o.policy_path)
		json_str(&d->out, d->o.policy_path, strlen(d->o.policy_path));
	else
		sbuf_puts(&d->out, "null");
	sbuf_puts(&d->out, "}\n");
	if (d->policy)
		emit_policy(d, false);
}

static void emit_stop(struct daemon *d)
{
	struct eg_counters c = {};

	tracer_read_counters(bpf_map__fd(d->skel->maps.counters), &c);
	if (d->text) {
		char line[256];

		snprintf(line, sizeof(line),
			 "execgate stopped: %" PRIu64 " exec, %" PRIu64 " exec_failed written, %" PRIu64 " lost",
			 d->written_exec, d->written_failed, (uint64_t)(c.lost_exec + c.lost_exec_failed));
		emit_meta_text(d, line);
		return;
	}
	format_json_open(&d->out, "daemon", clock_real_ns());
	sbuf_printf(&d->out, ",\"event\":\"stop\",\"exec\":%" PRIu64 ",\"exec_failed\":%" PRIu64
		    ",\"lost\":%llu,\"argv_truncated\":%llu,\"read_faults\":%llu"
		    ",\"malformed\":%" PRIu64 "}\n",
		    d->written_exec, d->written_failed,
		    (unsigned long long)(c.lost_exec + c.lost_exec_failed),
		    (unsigned long long)c.argv_truncated, (unsigned long long)c.read_faults,
		    d->malformed);
}

/* ---- setup -------------------------------------------------------------- */

static int setup_signals(int *ret_fd)
{
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

static int reopen_output(struct daemon *d)
{
	int fd;

	if (!d->o.output || !strcmp(d->o.output, "-"))
		return 0;
	fd = open_output(d->o.output);
	if (fd < 0)
		return -errno;
	flush_out(d);
	dup3(fd, d->out_fd, O_CLOEXEC);
	close(fd);
	return 0;
}

/* The pin directory is created by tracer_pin(); its parent must be a bpffs. */
static int mount_pin_parent(const char *pin_path)
{
	char parent[PATH_MAX];
	char *slash;

	if (snprintf(parent, sizeof(parent), "%s", pin_path) >= (int)sizeof(parent))
		return -ENAMETOOLONG;
	slash = strrchr(parent, '/');
	if (!slash)
		return -EINVAL;
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	return eg_mount_bpffs(parent);
}

static int run_loop(struct daemon *d, int sfd)
{
	struct epoll_event ev = { .events = EPOLLIN }, evs[4];
	bool stop = false;
	int epfd, i, n, err = 0;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	ev.data.fd = sfd;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev))
		goto fail;
	ev.data.fd = ring_buffer__epoll_fd(d->rb);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, ev.data.fd, &ev))
		goto fail;

	while (!stop && !d->write_failed) {
		n = epoll_wait(epfd, evs, 4, DRAIN_INTERVAL_MS);
		if (n < 0 && errno != EINTR)
			goto fail;
		for (i = 0; i < n; i++) {
			struct signalfd_siginfo si;

			if (evs[i].data.fd != sfd)
				continue;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					int e = reopen_output(d);

					if (e)
						p_warn("SIGHUP: cannot reopen %s: %s; still writing to the old file",
						       d->o.output, strerror(-e));
					reload_policy(d);
				} else {
					stop = true;
				}
			}
		}
		drain(d, false);
	}
	close(epfd);
	return d->write_failed ? -EIO : 0;
fail:
	err = -errno;
	close(epfd);
	return err;
}

int do_daemon(int argc, char **argv)
{
	struct argp argp = { options, parse_opt, NULL, doc, NULL, NULL, NULL };
	struct daemon d = { .out_fd = -1 };
	struct tracer_opts to = {};
	struct eg_features feats;
	char pidfile[PATH_MAX];
	int pid_fd = -1, sfd = -1, err, rc = 1;
	pid_t other = 0;

	d.o.pin_path = EG_PIN_PATH_DEFAULT;
	d.o.max_argv_bytes = EG_ARGV_DEFAULT;
	d.o.ringbuf_size = EG_RINGBUF_DEFAULT;
	if (argp_parse(&argp, argc, argv, 0, NULL, &d.o))
		return 2;
	eg_libbpf_setup();

	if (geteuid() != 0) {
		p_err("daemon: needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN)");
		return 1;
	}
	err = pidfile_path(d.o.pin_path, pidfile, sizeof(pidfile));
	if (!err)
		err = pidfile_acquire(pidfile, &pid_fd, &other);
	if (err == -EBUSY) {
		p_err("another execgate daemon (pid %d) is running on pin path %s", (int)other, d.o.pin_path);
		return 1;
	}
	if (err) {
		p_err("cannot take the daemon lock %s: %s", pidfile, strerror(-err));
		return 1;
	}
	err = setup_signals(&sfd);
	if (err) {
		p_err("cannot set up signal handling: %s", strerror(-err));
		goto cleanup;
	}
	d.out_fd = open_output(d.o.output);
	if (d.out_fd < 0) {
		p_err("cannot open %s: %s", d.o.output, strerror(errno));
		goto cleanup;
	}
	d.text = d.o.format == FMT_TEXT ||
		 (d.o.format == FMT_AUTO && (!d.o.output || !strcmp(d.o.output, "-")) && isatty(STDOUT_FILENO));

	to.max_argv_bytes = d.o.max_argv_bytes;
	to.ringbuf_size = d.o.ringbuf_size;
	if (d.o.cgroup) {
		err = cgroup_resolve(d.o.cgroup, &to.cgroup_id, &to.cgroup_level);
		if (err) {
			p_err("--cgroup %s: %s (a cgroup v2 directory, absolute or relative to the cgroup2 mount)",
			      d.o.cgroup, strerror(-err));
			goto cleanup;
		}
	}
	if (d.o.policy_path) {
		struct eg_diags diags = {};

		err = policy_load_file(d.o.policy_path, &d.policy, &diags);
		diag_lines(&diags, false, print_diag, NULL);
		eg_diags_free(&diags);
		if (err) {
			p_err("policy %s does not load; fix the errors above ('execgate policy check %s')",
			      d.o.policy_path, d.o.policy_path);
			goto cleanup;
		}
		d.cgroups = cgroup_cache_new();
	}
	err = mount_pin_parent(d.o.pin_path);
	if (err) {
		p_err("cannot mount bpffs for %s: %s", d.o.pin_path, strerror(-err));
		goto cleanup;
	}
	err = eg_mount_tracefs();
	if (err) {
		p_err("cannot mount tracefs at /sys/kernel/tracing: %s", strerror(-err));
		goto cleanup;
	}
	probe_features(&feats);
	probe_mode(&feats, &d.mode);

	err = tracer_start(&to, &d.skel);
	if (err) {
		p_err("cannot load the tracer: %s (run 'execgate probe' to see what this kernel lacks; -v for the verifier log)",
		      strerror(-err));
		goto cleanup;
	}
	err = tracer_pin(d.skel, d.o.pin_path);
	if (err) {
		p_err("cannot pin maps under %s: %s", d.o.pin_path, strerror(-err));
		goto cleanup;
	}
	d.rb = ring_buffer__new(bpf_map__fd(d.skel->maps.events), on_record, &d, NULL);
	if (!d.rb) {
		p_err("cannot open the ring buffer: %s", strerror(errno));
		goto cleanup;
	}
	d.boot_to_real = clock_boot_to_real();
	emit_start(&d);
	if (flush_out(&d))
		goto cleanup;
	p_info("tracing every exec (tracer %s, kernel enforcement %s, sessions %s); events to %s",
	       d.mode.tracer, d.mode.kernel_enforcement, d.mode.session_enforcement,
	       d.o.output ? d.o.output : "stdout");

	err = run_loop(&d, sfd);

	/* Stop new records, then take everything still queued. */
	tracer_detach(d.skel);
	drain(&d, true);
	emit_stop(&d);
	flush_out(&d);
	rc = (err || d.write_failed) ? 1 : 0;
	if (err && err != -EIO)
		p_err("event loop failed: %s", strerror(-err));

cleanup:
	ring_buffer__free(d.rb);
	if (d.skel)
		tracer_unpin(d.skel, d.o.pin_path);
	tracer_destroy(d.skel);
	decoder_free(&d.dec);
	policy_free(d.policy);
	cgroup_cache_free(d.cgroups);
	free(d.argvp);
	sbuf_free(&d.fname);
	sbuf_free(&d.out);
	if (d.out_fd >= 0)
		close(d.out_fd);
	if (sfd >= 0)
		close(sfd);
	pidfile_release(pidfile, pid_fd);
	return rc;
}
