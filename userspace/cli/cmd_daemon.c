// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate daemon: the options; the daemon itself is daemon/daemon.c. */
#include <argp.h>
#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/commands.h"
#include "api/api.h"
#include "cli/common.h"
#include "daemon/daemon.h"
#include "daemon/httpd.h"
#include "events/sinks.h"
#include "util/severity.h"
#include "execgate.h"
#include "util/caps.h"
#include "util/log.h"
#include "util/paths.h"
#include "util/units.h"

static const char doc[] =
"Trace every execve/execveat on this host and write one event per line."
"\v"
"Events are JSON lines (schema v1, docs/events.md) when the output is a file "
"or a pipe, a readable table when it is a terminal. The first record says how "
"the daemon runs and which enforcement layers are active. SIGINT/SIGTERM "
"drain the ring buffer, write a stop record and exit 0; SIGHUP reopens "
"--output (for logrotate). Maps are pinned under --pin-path for bpftool "
"(docs/maps.md); the control socket (docs/control.md) serves 'execgate "
"status', 'stats', 'metrics' and 'policy reload'. With --policy every event "
"carries the policy's decision.";

enum {
	OPT_MAX_ARGV = 0x100,
	OPT_RINGBUF,
	OPT_FORMAT,
	OPT_CGROUP,
	OPT_POLICY,
	OPT_CTL_GROUP,
	OPT_OUT_MAX,
	OPT_OUT_KEEP,
	OPT_UID,
	OPT_EXCL_COMM,
	OPT_EXCL_PATH,
	OPT_EXEC_FAILED,
	OPT_METRICS_LISTEN,
	OPT_API_LISTEN,
	OPT_API_TOKEN_FILE,
	OPT_API_RUN_AS,
	OPT_METRICS_TEXTFILE,
	OPT_METRICS_INTERVAL,
	OPT_TAKEOVER,
	OPT_ENFORCE,
	OPT_ALLOW_PARTIAL,
	OPT_CHECK,
	OPT_PERSIST,
	OPT_STATE_DIR,
	OPT_WORKSPACE,
	OPT_EXIT_EVENTS,
	OPT_SYSLOG,
	OPT_SYSLOG_MAX,
	OPT_JOURNAL,
	OPT_MIN_SEVERITY,
	OPT_HOSTNAME,
};

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Output:", 1 },
	{ "output", 'o', "FILE", 0, "Append events to FILE (default: stdout). FILE must be a regular file owned by root and not group/world writable; a new one is created 0640", 1 },
	{ "format", OPT_FORMAT, "json|text", 0, "Output format (default: text on a terminal, else json)", 1 },
	{ "output-max-size", OPT_OUT_MAX, "BYTES", 0, "Rotate --output when it reaches BYTES (suffix K/M/G); rotated files are gzip-compressed", 1 },
	{ "output-keep", OPT_OUT_KEEP, "N", 0, "Rotated files kept (default 5)", 1 },
	{ "syslog", OPT_SYSLOG, "SOCKET", OPTION_ARG_OPTIONAL, "Also send every record to syslog: RFC 5424 datagrams to SOCKET (default /dev/log), the JSON record as the message (docs/shipping.md)", 1 },
	{ "syslog-max-bytes", OPT_SYSLOG_MAX, "BYTES", 0, "A syslog datagram longer than BYTES (default 8000, under rsyslog's default message size of 8096; 0: no limit but the socket's) carries its record with argv cut to fit, said by \"syslog_cut\"; the file keeps it whole", 1 },
	{ "journal", OPT_JOURNAL, "SOCKET", OPTION_ARG_OPTIONAL, "Also send every record to journald's native protocol at SOCKET (default /run/systemd/journal/socket): MESSAGE a summary, the fields as EXECGATE_*", 1 },
	{ "min-severity", OPT_MIN_SEVERITY, "[OUT=]LEVEL", 0, "Leave out exec, exec_failed and exit records whose rule's severity is below LEVEL (info, low, medium, high, critical; a record of no rule is below info): on every output, or on one (OUT: output, syslog, journal; repeatable)", 1 },
	{ "hostname", OPT_HOSTNAME, "NAME", 0, "The host's name in the records (hostname) and syslog datagrams (default: gethostname(); in a pod, the pod's: give the node's, as dist/kubernetes/execgate.yaml does)", 1 },
	{ "exit-events", OPT_EXIT_EVENTS, "all|none", 0, "Exit records, one at the end of every exec'd process (all, default), or none (no record is built in the kernel)", 2 },
	{ NULL, 0, NULL, 0, "Tracing:", 2 },
	{ "max-argv-bytes", OPT_MAX_ARGV, "N", 0,
	  "Bytes of argv kept per exec (default 65536, up to 2097152); longer argv is cut at an argument boundary and flagged", 2 },
	{ "ringbuf-size", OPT_RINGBUF, "BYTES", 0,
	  "Ring buffer size, a power of two >= 4096, suffix K/M allowed (default 4M)", 2 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Only trace and enforce in this cgroup v2 directory and below (repeatable: each is a subtree)", 2 },
	{ "uid", OPT_UID, "USER", 0, "Only report execs by this user (a name or a uid; repeatable)", 2 },
	{ "exclude-comm", OPT_EXCL_COMM, "GLOB", 0, "Leave out execs whose comm matches GLOB (repeatable; logging only: they are still judged and enforced)", 2 },
	{ "exclude-path", OPT_EXCL_PATH, "GLOB", 0, "Leave out execs whose program path matches GLOB ('*' crosses '/'; repeatable; logging only)", 2 },
	{ "exec-failed", OPT_EXEC_FAILED, "all|none|collapse", 0, "Failed execs: a record each (all, default), none (no failure record is built in the kernel), or collapse (a PATH search's ENOENT failures folded into the exec that ends it)", 2 },
	{ NULL, 0, NULL, 0, "Policy and control:", 3 },
	{ "policy", OPT_POLICY, "FILE", 0, "Annotate every event with this policy's decision (policy/README.md)", 3 },
	{ "ctl-group", OPT_CTL_GROUP, "GROUP", 0, "Members of GROUP may use the control socket's admin ops (status, stats, metrics, reload, approvals) and read --output", 3 },
	{ "state-dir", OPT_STATE_DIR, "DIR", 0, "Where 'execgate run --background' logs go (DIR/procs; default /var/lib/execgate)", 3 },
	{ "workspace", OPT_WORKSPACE, "DIR", 0, "'execgate run' processes start inside DIR: a --cwd that resolves outside it is refused", 3 },
	{ "takeover", OPT_TAKEOVER, "FD", OPTION_HIDDEN, "internal: the state a daemon handing over left in FD", 3 },
	{ "check", OPT_CHECK, NULL, 0, "Check that this command line would start a daemon here, and exit (0: it would): the policy loaded (and compiled for the kernel with --enforce), the API's token file read, the BPF programs loaded, verified and attached by this kernel with maps of their own and switched off, then let go; nothing pinned or written, and a running daemon is left alone (a handover runs it with the new binary first)", 3 },
	{ NULL, 0, NULL, 0, "Kernel enforcement (docs/enforcement.md):", 4 },
	{ "enforce", OPT_ENFORCE, NULL, 0, "Enforce --policy in the kernel: a denied exec fails with EPERM (BPF LSM) or is killed before its image runs (elsewhere)", 4 },
	{ "allow-partial", OPT_ALLOW_PARTIAL, NULL, 0, "With --enforce, accept a policy whose deny rules the kernel cannot all hold (the rest is enforced in sessions only; the start record lists them)", 4 },
	{ "persist", OPT_PERSIST, NULL, 0, "With --enforce, leave the kernel rules in force when the daemon stops ('execgate unload' removes them)", 4 },
	{ NULL, 0, NULL, 0, "Metrics (docs/metrics.md):", 5 },
	{ "metrics-listen", OPT_METRICS_LISTEN, "ADDR:PORT", 0, "Serve GET /metrics over HTTP on ADDR:PORT (e.g. 127.0.0.1:9464; off by default; the address must be spelled, [::1]:PORT for IPv6)", 5 },
	{ "metrics-textfile", OPT_METRICS_TEXTFILE, "FILE.prom", 0, "Write the metrics to FILE.prom for node_exporter's textfile collector, atomically, every --metrics-interval", 5 },
	{ "metrics-interval", OPT_METRICS_INTERVAL, "SECONDS", 0, "Seconds between --metrics-textfile writes (default 15)", 5 },
	{ NULL, 0, NULL, 0, "HTTP and WebSocket API (docs/api.md):", 6 },
	{ "api-listen", OPT_API_LISTEN, "ADDR:PORT", 0, "Serve the HTTP/WebSocket API and the approvals page on ADDR:PORT (off by default; a bare PORT is 127.0.0.1; needs --api-token-file)", 6 },
	{ "api-token-file", OPT_API_TOKEN_FILE, "FILE", 0, "The API's bearer tokens, a line 'NAME TOKEN' each; FILE must be root's and not readable by group or others", 6 },
	{ "api-run-as", OPT_API_RUN_AS, "USER", 0, "Runs started through the API run as USER (never root); without it the API starts no runs", 6 },
	{},
};

struct daemon_args {
	struct cli_common common;
	struct daemon_opts o;
};

/* The largest record the tracer makes with this argv cap, as the ring buffer stores it. */
static size_t record_max(uint32_t argv_cap)
{
	return EG_RECORD_MAX(argv_cap) + 8 /* BPF_RINGBUF_HDR_SZ */;
}

/* The smallest power of two that holds it. */
static uint32_t ringbuf_min(uint32_t argv_cap)
{
	uint32_t v = 4096;

	while (v < record_max(argv_cap))
		v <<= 1;
	return v;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct daemon_args *a = state->input;
	struct daemon_opts *o = &a->o;
	uint64_t v;
	char *end;

	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, &a->common);
		break;
	case 'o':
		o->output = arg;
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
		o->ringbuf_size_set = true;
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
		if (o->n_cgroups == DAEMON_MAX_LIST)
			argp_error(state, "at most %d --cgroup options", DAEMON_MAX_LIST);
		o->cgroups[o->n_cgroups++] = arg;
		break;
	case OPT_POLICY:
		o->policy_path = arg;
		break;
	case OPT_CTL_GROUP: {
		struct group *g = getgrnam(arg);

		if (!g) {
			errno = 0;
			v = strtoul(arg, &end, 10);
			if (*end || errno || !*arg)
				argp_error(state, "--ctl-group: no group named '%s'", arg);
			o->ctl_gid = v;
		} else {
			o->ctl_gid = g->gr_gid;
		}
		o->ctl_group = arg;
		break;
	}
	case OPT_OUT_MAX:
		if (parse_size(arg, &v))
			argp_error(state, "--output-max-size: cannot parse the size '%s' (a number of bytes, "
				   "suffix K, M or G: 256M)", arg);
		if (v < 4096)
			argp_error(state, "--output-max-size must be at least 4096 bytes");
		o->output_max_size = v;
		break;
	case OPT_OUT_KEEP:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (*end || errno || !*arg || v > 1000)
			argp_error(state, "--output-keep takes a number from 0 to 1000");
		o->output_keep = v;
		break;
	case OPT_UID: {
		struct passwd *pw = getpwnam(arg);

		errno = 0;
		v = pw ? pw->pw_uid : strtoul(arg, &end, 10);
		if (!pw && (*end || errno || !*arg || v >= UINT32_MAX))
			argp_error(state, "--uid: no user named '%s' (a user name or a numeric uid)", arg);
		if (o->n_uids == DAEMON_MAX_LIST)
			argp_error(state, "at most %d --uid options", DAEMON_MAX_LIST);
		o->uids[o->n_uids++] = v;
		break;
	}
	case OPT_EXCL_COMM:
		if (o->n_exclude_comm == DAEMON_MAX_LIST)
			argp_error(state, "at most %d --exclude-comm options", DAEMON_MAX_LIST);
		if (!*arg)
			argp_error(state, "--exclude-comm needs a glob");
		o->exclude_comm[o->n_exclude_comm++] = arg;
		break;
	case OPT_EXCL_PATH:
		if (o->n_exclude_path == DAEMON_MAX_LIST)
			argp_error(state, "at most %d --exclude-path options", DAEMON_MAX_LIST);
		if (!*arg)
			argp_error(state, "--exclude-path needs a glob");
		o->exclude_path[o->n_exclude_path++] = arg;
		break;
	case OPT_EXEC_FAILED:
		if (!strcmp(arg, "all"))
			o->exec_failed = EXEC_FAILED_ALL;
		else if (!strcmp(arg, "none"))
			o->exec_failed = EXEC_FAILED_NONE;
		else if (!strcmp(arg, "collapse"))
			o->exec_failed = EXEC_FAILED_COLLAPSE;
		else
			argp_error(state, "--exec-failed is all, none or collapse");
		break;
	case OPT_METRICS_LISTEN: {
		struct httpd_addr ha;
		char msg[256];

		if (httpd_parse_addr(arg, &ha, msg, sizeof(msg)))
			argp_error(state, "--metrics-listen %s", msg);
		o->metrics_listen = arg;
		break;
	}
	case OPT_API_LISTEN: {
		char addr[64], msg[256];
		int port;

		if (api_parse_listen(arg, addr, sizeof(addr), &port, msg, sizeof(msg)))
			argp_error(state, "%s", msg);
		o->api_listen = arg;
		break;
	}
	case OPT_API_TOKEN_FILE:
		o->api_token_file = arg;
		break;
	case OPT_API_RUN_AS: {
		struct passwd *pw = getpwnam(arg);

		if (!pw)
			argp_error(state, "--api-run-as: no user named '%s'", arg);
		if (!pw->pw_uid)
			argp_error(state, "--api-run-as %s: the API never runs anything as root; name another user", arg);
		o->api_run_as_set = true;
		o->api_run_as_uid = pw->pw_uid;
		o->api_run_as_gid = pw->pw_gid;
		break;
	}
	case OPT_METRICS_TEXTFILE: {
		size_t n = strlen(arg);

		if (n < 6 || strcmp(arg + n - 5, ".prom") || arg[n - 6] == '/')
			argp_error(state, "--metrics-textfile must name a FILE.prom (node_exporter reads only *.prom)");
		o->metrics_textfile = arg;
		break;
	}
	case OPT_METRICS_INTERVAL:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (*end || errno || !*arg || v < 1 || v > 3600)
			argp_error(state, "--metrics-interval takes seconds, 1 to 3600");
		o->metrics_interval = v;
		break;
	case OPT_STATE_DIR:
		if (arg[0] != '/')
			argp_error(state, "--state-dir takes an absolute path");
		o->state_dir = arg;
		break;
	case OPT_HOSTNAME: {
		size_t i, n = strlen(arg);

		/* syslog's HOSTNAME field: 1 to 255 printable ASCII characters, no space */
		for (i = 0; i < n && arg[i] > ' ' && arg[i] < 0x7f; i++)
			;
		if (!n || n > 255 || i < n)
			argp_error(state, "--hostname takes 1 to 255 printable ASCII characters, no space");
		o->hostname = arg;
		break;
	}
	case OPT_WORKSPACE:
		if (arg[0] != '/')
			argp_error(state, "--workspace takes an absolute path");
		o->workspace = arg;
		break;
	case OPT_EXIT_EVENTS:
		if (!strcmp(arg, "all"))
			o->no_exits = false;
		else if (!strcmp(arg, "none"))
			o->no_exits = true;
		else
			argp_error(state, "--exit-events is all or none");
		break;
	case OPT_SYSLOG:
		o->syslog = arg && *arg ? arg : SYSLOG_DEFAULT_SOCKET;
		break;
	case OPT_SYSLOG_MAX:
		if (parse_size(arg, &v) || (v && (v < 1024 || v > (16u << 20))))
			argp_error(state, "--syslog-max-bytes: 0, or 1024 to 16M bytes");
		o->syslog_max_bytes = v;
		o->syslog_max_set = true;
		break;
	case OPT_JOURNAL:
		o->journal = arg && *arg ? arg : JOURNAL_DEFAULT_SOCKET;
		break;
	case OPT_MIN_SEVERITY: {
		const char *eq = strchr(arg, '=');
		int sev = eg_severity_parse(eq ? eq + 1 : arg);

		if (!sev)
			argp_error(state, "--min-severity takes info, low, medium, high or critical, "
				   "for one output OUTPUT=LEVEL (output, syslog, journal)");
		if (!eq)
			o->min_severity = sev;
		else if (!strncmp(arg, "output=", 7))
			o->min_severity_output = sev;
		else if (!strncmp(arg, "syslog=", 7))
			o->min_severity_syslog = sev;
		else if (!strncmp(arg, "journal=", 8))
			o->min_severity_journal = sev;
		else
			argp_error(state, "--min-severity %.*s=: the outputs are output, syslog and journal",
				   (int)(eq - arg), arg);
		break;
	}
	case OPT_TAKEOVER:
		o->takeover_fd = atoi(arg);
		break;
	case OPT_ENFORCE:
		o->enforce = true;
		break;
	case OPT_ALLOW_PARTIAL:
		o->allow_partial = true;
		break;
	case OPT_CHECK:
		o->check = true;
		break;
	case OPT_PERSIST:
		o->persist = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (o->output_keep != 5 && !o->output_max_size)
			argp_error(state, "--output-keep needs --output-max-size");
		if (o->output_max_size && (!o->output || !strcmp(o->output, "-")))
			argp_error(state, "--output-max-size needs --output FILE");
		if (o->enforce && !o->policy_path)
			argp_error(state, "--enforce needs --policy FILE (the rules to enforce)");
		if ((o->allow_partial || o->persist) && !o->enforce)
			argp_error(state, "--allow-partial and --persist go with --enforce");
		/* with BPF LSM a refused exec is a failed exec: none would hide the refusals */
		if (o->enforce && o->exec_failed == EXEC_FAILED_NONE)
			argp_error(state, "--exec-failed=none would hide the kernel's refusals (with BPF LSM a refused "
				   "exec is a failed exec): use --exec-failed=collapse with --enforce");
		if ((o->syslog || o->journal) && o->format == FMT_TEXT)
			argp_error(state, "--syslog and --journal send JSON records: drop --format text");
		if (!o->min_severity_output)
			o->min_severity_output = o->min_severity;
		if (!o->min_severity_syslog)
			o->min_severity_syslog = o->min_severity;
		if (!o->min_severity_journal)
			o->min_severity_journal = o->min_severity;
		if (o->api_listen && !o->api_token_file)
			argp_error(state, "--api-listen needs --api-token-file FILE (nothing is served without a token)");
		if ((o->api_token_file || o->api_run_as_set) && !o->api_listen)
			argp_error(state, "--api-token-file and --api-run-as go with --api-listen");
		if (o->metrics_interval && !o->metrics_textfile)
			argp_error(state, "--metrics-interval needs --metrics-textfile");
		if (!o->metrics_interval)
			o->metrics_interval = 15;
		/* the ring must hold the largest record this argv cap can make */
		if (o->ringbuf_size_set && o->ringbuf_size < ringbuf_min(o->max_argv_bytes))
			argp_error(state, "--ringbuf-size %u cannot hold one record at --max-argv-bytes %u "
				   "(up to %zu bytes): use --ringbuf-size %u or more",
				   o->ringbuf_size, o->max_argv_bytes, record_max(o->max_argv_bytes),
				   ringbuf_min(o->max_argv_bytes));
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int do_daemon(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cli_pin_argp, 0, NULL, 0 }, {} };
	struct argp argp = { options, parse_opt, NULL, doc, children, NULL, NULL };
	struct daemon_args a = {};

	a.o.max_argv_bytes = EG_ARGV_DEFAULT;
	a.o.ringbuf_size = EG_RINGBUF_DEFAULT;
	a.o.ctl_gid = (gid_t)-1;
	a.o.output_keep = 5;
	a.o.takeover_fd = -1;
	a.o.argc = argc - 1;
	a.o.argv = argv + 1;
	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return EXIT_USAGE;
	a.o.pin_path = a.common.pin_path ? a.common.pin_path : EG_PIN_PATH_DEFAULT;
	eg_libbpf_setup();
	if (!eg_have_bpf_caps()) {
		p_err(EG_NEEDS_ROOT);
		return 1;
	}
	return daemon_run(&a.o);
}
