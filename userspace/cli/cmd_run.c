// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate run, ps, poll, log, write, send-keys, kill: processes the daemon
 * starts in a supervised session and keeps in its registry (procs/procs.h,
 * docs/agents.md). A foreground run hands the daemon this process's stdin,
 * stdout and stderr (SCM_RIGHTS), so the command's output streams straight
 * to them, and waits on the control connection for the exit status.
 */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/b64.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "ctl/client.h"
#include "procs/text.h"
#include "util/jsonw.h"
#include "util/log.h"
#include "util/sbuf.h"
#include "util/termsafe.h"

#define MAX_ENV 256

extern char **environ;

struct run_args {
	struct cli_common common;
	const char *session, *cwd;
	bool background, pty, stateful, eof, newline;
	int64_t timeout_ms;		/* -1: the daemon's default */
	const char *env[MAX_ENV];
	size_t nenv;
	const char *signal;
	int64_t tail, offset;
	char **rest;			/* CMD..., or ID [TEXT|KEYS...] */
	int nrest;
};

enum {
	OPT_SESSION = 0x100, OPT_BACKGROUND, OPT_PTY, OPT_TIMEOUT, OPT_CWD, OPT_ENV, OPT_STATEFUL,
	OPT_SIGNAL, OPT_TAIL, OPT_OFFSET, OPT_EOF, OPT_NEWLINE,
};

static const struct argp_option run_options[] = {
	{ "session", OPT_SESSION, "NAME", 0, "The session's name (default run-N; with --stateful, the state's name too)", 0 },
	{ "background", OPT_BACKGROUND, NULL, 0, "Return at once with the process's id; output goes to its log", 0 },
	{ "pty", OPT_PTY, NULL, 0, "Run CMD on a pseudo-terminal (send-keys drives it)", 0 },
	{ "timeout", OPT_TIMEOUT, "DUR", 0, "Kill all it started (its cgroup and process group) after DUR (500ms, 30s, 5m, 1h; 0: never; default 30s in the foreground, none in the background)", 0 },
	{ "cwd", OPT_CWD, "DIR", 0, "The working directory (inside the daemon's --workspace)", 0 },
	{ "env", OPT_ENV, "K=V", 0, "Set a variable (repeatable; loader, shell-injection and secret names are refused)", 0 },
	{ "stateful", OPT_STATEFUL, NULL, 0, "Run CMD as a shell command line in the session's shell state (cwd, exports, $? carried between runs)", 0 },
	{},
};

static const struct argp_option kill_options[] = {
	{ "signal", OPT_SIGNAL, "SIG", 0, "The signal (TERM by default; a name or a number)", 0 },
	{},
};

static const struct argp_option log_options[] = {
	{ "tail", OPT_TAIL, "N", 0, "Only the last N lines", 0 },
	{ "offset", OPT_OFFSET, "N", 0, "From byte N of the log", 0 },
	{},
};

static const struct argp_option write_options[] = {
	{ "eof", OPT_EOF, NULL, 0, "Then close the process's input (Ctrl-D on a pty)", 0 },
	{ "newline", OPT_NEWLINE, NULL, 0, "Add a newline after TEXT", 0 },
	{},
};

static int parse_dur(const char *s, int64_t *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	if (!*end || !strcmp(end, "s"))
		v *= 1000;
	else if (!strcmp(end, "ms"))
		;
	else if (!strcmp(end, "m"))
		v *= 60000;
	else if (!strcmp(end, "h"))
		v *= 3600000;
	else
		return -EINVAL;
	if (v > 365.0 * 86400000)
		return -ERANGE;
	*ret = (int64_t)v;
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct run_args *a = state->input;
	char *end;

	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, &a->common);
		break;
	case OPT_SESSION:
		if (strlen(arg) > 63)
			argp_error(state, "--session takes a name of at most 63 bytes");
		a->session = arg;
		break;
	case OPT_BACKGROUND:
		a->background = true;
		break;
	case OPT_PTY:
		a->pty = true;
		break;
	case OPT_STATEFUL:
		a->stateful = true;
		break;
	case OPT_TIMEOUT:
		if (parse_dur(arg, &a->timeout_ms))
			argp_error(state, "--timeout %s: a duration such as 500ms, 30s, 5m or 1h", arg);
		break;
	case OPT_CWD:
		a->cwd = arg;
		break;
	case OPT_ENV:
		if (a->nenv == MAX_ENV)
			argp_error(state, "at most %d --env", MAX_ENV);
		if (!strchr(arg, '=') || arg[0] == '=')
			argp_error(state, "--env %s: NAME=VALUE expected", arg);
		a->env[a->nenv++] = arg;
		break;
	case OPT_SIGNAL:
		if (eg_signal_parse(arg) < 0)
			argp_error(state, "--signal %s: unknown signal", arg);
		a->signal = arg;
		break;
	case OPT_TAIL:
	case OPT_OFFSET:
		errno = 0;
		{
			long long v = strtoll(arg, &end, 10);

			if (errno || *end || !*arg || v < 0)
				argp_error(state, "--%s takes a number >= 0", key == OPT_TAIL ? "tail" : "offset");
			if (key == OPT_TAIL)
				a->tail = v;
			else
				a->offset = v;
		}
		break;
	case OPT_EOF:
		a->eof = true;
		break;
	case OPT_NEWLINE:
		a->newline = true;
		break;
	case ARGP_KEY_ARGS:
		a->rest = state->argv + state->next;
		a->nrest = state->argc - state->next;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int parse(int argc, char **argv, const struct argp_option *opts, const char *args_doc,
		 const char *doc, struct run_args *a)
{
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 }, {} };
	struct argp argp = { opts, parse_opt, args_doc, doc, children, NULL, NULL };

	a->timeout_ms = -1;
	a->tail = -1;
	a->offset = -1;
	return argp_parse(&argp, argc, argv, 0, NULL, a) ? EXIT_USAGE : 0;
}

/* The daemon's errors start with the op's name; ours with the verb's. */
static const char *strip_op(const char *e)
{
	const char *c = strchr(e, ':');

	if (c && c[1] == ' ' && c - e < 12 && !memchr(e, ' ', c - e))
		return c + 2;
	return e;
}

static int connect_daemon(const struct run_args *a)
{
	int fd = ctl_connect(a->common.pin_path);

	if (fd < 0)
		p_err("no daemon is running (%s): start one with 'execgate daemon'", ctl_connect_hint(fd));
	return fd;
}

/* One request, one reply; NULL (message printed, *rc set) on failure. */
static json_t *call(const struct run_args *a, struct sbuf *req, const int *fds, int nfds, int fd_in,
		    int *rc)
{
	struct sbuf line = {};
	json_t *reply;
	int fd = fd_in >= 0 ? fd_in : connect_daemon(a), err;

	*rc = 1;
	if (fd < 0) {
		*rc = EXIT_USAGE;
		return NULL;
	}
	if (req->oom) {
		p_err("out of memory");
		goto fail;
	}
	err = ctl_send_request(fd, req->data, req->len, fds, nfds);
	if (!err)
		err = ctl_read_line(fd, &line, 30000, 16 << 20);
	if (err) {
		p_err("the daemon did not answer: %s", strerror(-err));
		goto fail;
	}
	reply = json_loadb(line.data, line.len, 0, NULL);
	sbuf_free(&line);
	if (!reply) {
		p_err("the daemon's answer is not JSON");
		goto fail;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		const char *e = json_string_value(json_object_get(reply, "error"));

		p_err("%s", strip_op(e ? e : "refused"));
		json_decref(reply);
		goto fail;
	}
	if (fd_in < 0)
		close(fd);
	*rc = 0;
	return reply;
fail:
	sbuf_free(&line);
	if (fd_in < 0)
		close(fd);
	return NULL;
}

static int print_json(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);

	if (!s)
		return 1;
	puts(s);
	free(s);
	return fflush(stdout) ? 1 : 0;
}

/* Asks a daemon that took over (SIGUSR2) for process id's exit line; the connection or -1. */
static int rewait(const struct run_args *a, const char *id)
{
	struct sbuf req = {}, line = {};
	struct jsonw w;
	json_t *reply;
	int fd = -1, tries, err = -1;

	jsonw_init(&w, &req);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "op", "wait");
	jsonw_string_field(&w, "id", id);
	jsonw_end_object(&w);
	/* the socket is handed over, so this connects at once; a socket that is
	 * gone means a daemon that stopped; a refusal, give it 5 s */
	for (tries = 0; tries < 50 && !req.oom; tries++) {
		fd = ctl_connect(a->common.pin_path);
		if (fd >= 0 || fd == -ENOENT)
			break;
		usleep(100 * 1000);
	}
	if (fd >= 0 && !req.oom)
		err = ctl_send_request(fd, req.data, req.len, NULL, 0);
	if (!err)
		err = ctl_read_line(fd, &line, 30000, 1 << 20);
	sbuf_free(&req);
	if (err) {
		sbuf_free(&line);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	reply = json_loadb(line.data, line.len, 0, NULL);
	sbuf_free(&line);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		const char *e = json_string_value(json_object_get(reply, "error"));

		p_err("the daemon restarted and lost %s: %s", id, strip_op(e ? e : "no answer"));
		json_decref(reply);
		close(fd);
		return -2;
	}
	json_decref(reply);
	return fd;
}

/*
 * The exit line of a foreground run. A daemon that re-executes itself
 * (SIGUSR2) keeps the process but not this connection: ask the new one.
 */
static json_t *wait_exit(const struct run_args *a, int fd, const char *id)
{
	json_t *ev;

	for (;;) {
		struct sbuf line = {};
		int err = ctl_read_line(fd, &line, -1, 1 << 20);

		if (err) {
			sbuf_free(&line);
			close(fd);
			fd = id[0] ? rewait(a, id) : -1;
			if (fd == -1)
				p_err("the daemon went away before the command ended");
			if (fd < 0)
				return NULL;
			continue;
		}
		ev = json_loadb(line.data, line.len, 0, NULL);
		sbuf_free(&line);
		if (ev && !strcmp(json_string_value(json_object_get(ev, "event")) ?: "", "exit")) {
			close(fd);
			return ev;
		}
		json_decref(ev);
	}
}

int do_run(int argc, char **argv)
{
	static const char doc[] =
		"Ask the daemon to run CMD in a supervised session, as you (every exec is\n"
		"judged by its policy). In the foreground CMD uses this terminal's stdin,\n"
		"stdout and stderr and is killed, with all it started (its cgroup), after\n"
		"--timeout; the exit status is CMD's (128+N when signal N killed it). With\n"
		"--background it prints the process's id (the last word) and returns; see\n"
		"ps, poll, log, write, send-keys and kill. --stateful runs CMD as a bash\n"
		"command line in the session's shell state (cwd, exports, $? kept by the\n"
		"daemon between runs). docs/agents.md says more.";
	struct run_args a = {};
	struct sbuf req = {};
	struct jsonw w;
	char cwd[PATH_MAX], buf[PATH_MAX * 2], id[32];
	int fds[3] = { 0, 1, 2 }, fd, rc, i;
	size_t envbytes = 0;
	json_t *reply, *ev;
	char **e;

	if (parse(argc, argv, run_options, "-- CMD [ARG...]", doc, &a))
		return EXIT_USAGE;
	if (a.nrest < 1) {
		p_err("which command? execgate run [OPTION...] -- CMD [ARG...]");
		return EXIT_USAGE;
	}
	for (i = 0; i < (int)a.nenv; i++)
		if (eg_env_blocked(a.env[i], a.stateful)) {
			p_err("--env %.*s is refused: loader, shell-injection and secret variables never reach a run",
			      (int)strcspn(a.env[i], "="), a.env[i]);
			return EXIT_USAGE;
		}
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "/");
	jsonw_init(&w, &req);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "op", "run");
	if (a.stateful) {
		struct sbuf cmd = {};

		for (i = 0; i < a.nrest; i++) {
			if (i)
				sbuf_putc(&cmd, ' ');
			sbuf_puts(&cmd, a.rest[i]);
		}
		jsonw_key(&w, "command");
		jsonw_bytes(&w, cmd.data ? cmd.data : "", cmd.len);
		if (cmd.oom)
			req.oom = true;
		sbuf_free(&cmd);
		jsonw_bool_field(&w, "stateful", true);
	} else {
		jsonw_key(&w, "argv");
		jsonw_start_array(&w);
		for (i = 0; i < a.nrest; i++)
			jsonw_string(&w, a.rest[i]);
		jsonw_end_array(&w);
	}
	if (a.session)
		jsonw_string_field(&w, "session", a.session);
	jsonw_bool_field(&w, "background", a.background);
	jsonw_bool_field(&w, "pty", a.pty);
	if (a.timeout_ms >= 0)
		jsonw_int_field(&w, "timeout_ms", a.timeout_ms);
	if (a.cwd) {
		if (a.cwd[0] == '/')
			snprintf(buf, sizeof(buf), "%s", a.cwd);
		else
			snprintf(buf, sizeof(buf), "%s/%s", cwd, a.cwd);
		jsonw_string_field(&w, "cwd", buf);
		jsonw_bool_field(&w, "cwd_explicit", true);
	} else {
		jsonw_string_field(&w, "cwd", cwd);
	}
	jsonw_key(&w, "env");
	jsonw_start_array(&w);
	for (i = 0; i < (int)a.nenv; i++)
		jsonw_string(&w, a.env[i]);
	jsonw_end_array(&w);
	/* the caller's environment: the daemon drops what the blocklist names */
	jsonw_key(&w, "environ");
	jsonw_start_array(&w);
	for (e = environ; *e; e++) {
		envbytes += strlen(*e);
		if (envbytes > 128 * 1024)
			break;
		jsonw_string(&w, *e);
	}
	jsonw_end_array(&w);
	jsonw_end_object(&w);

	fd = connect_daemon(&a);
	if (fd < 0) {
		sbuf_free(&req);
		return EXIT_USAGE;
	}
	reply = call(&a, &req, a.background ? NULL : fds, a.background ? 0 : 3, fd, &rc);
	sbuf_free(&req);
	if (!reply) {
		close(fd);
		return rc;
	}
	if (a.background) {
		close(fd);
		json_object_del(reply, "ok");
		if (a.common.json)
			rc = print_json(reply);
		else {
			printf("started pid %lld in session %s, log %s; id %s\n",
			       (long long)json_integer_value(json_object_get(reply, "pid")),
			       json_string_value(json_object_get(reply, "session")),
			       json_string_value(json_object_get(reply, "log")),
			       json_string_value(json_object_get(reply, "id")));
			rc = fflush(stdout) ? 1 : 0;
		}
		json_decref(reply);
		return rc;
	}
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(reply, "id")) ?: "");
	json_decref(reply);
	ev = wait_exit(&a, fd, id);
	if (!ev)
		return 1;
	if (json_is_integer(json_object_get(ev, "exit_code")))
		rc = json_integer_value(json_object_get(ev, "exit_code"));
	else {
		const char *s = json_string_value(json_object_get(ev, "signal"));

		rc = 128 + (s ? eg_signal_parse(s) : 9);
	}
	if (json_is_true(json_object_get(ev, "timed_out")))
		p_err("timed out: all it started was killed (%s)",
		      json_string_value(json_object_get(ev, "status")));
	if (json_string_value(json_object_get(ev, "warning")))
		p_err("the session does not keep %s: too long for the next command's exec (128 KiB a "
		      "variable, 1 MiB in all)", json_string_value(json_object_get(ev, "warning")));
	json_decref(ev);
	return rc;
}

static int need_id(const struct run_args *a, int min, int max, const char *usage)
{
	if (a->nrest < min || a->nrest > max) {
		p_err("usage: %s", usage);
		return EXIT_USAGE;
	}
	return 0;
}

static void req_id(struct jsonw *w, const char *op, const char *id)
{
	jsonw_start_object(w);
	jsonw_string_field(w, "op", op);
	jsonw_string_field(w, "id", id);
}

static int last_byte = '\n';

static int b64_out(json_t *reply, FILE *f)
{
	const char *s = json_string_value(json_object_get(reply, "data_b64"));
	size_t n = s ? strlen(s) : 0, len;
	unsigned char *out;

	if (!n)
		return 0;
	if (b64_decode(s, n, &out, &len))
		return -1;
	fwrite(out, 1, len, f);
	if (len > 0)
		last_byte = out[len - 1];
	free(out);
	return (int)len;
}

int do_ps(int argc, char **argv)
{
	static const char doc[] = "List the processes the daemon runs for you (all of them for root).";
	struct run_args a = {};
	struct sbuf req = {};
	struct jsonw w;
	json_t *reply, *p;
	size_t i;
	int rc;

	if (parse(argc, argv, NULL, NULL, doc, &a) || need_id(&a, 0, 0, "execgate ps"))
		return EXIT_USAGE;
	jsonw_init(&w, &req);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "op", "ps");
	jsonw_end_object(&w);
	reply = call(&a, &req, NULL, 0, -1, &rc);
	sbuf_free(&req);
	if (!reply)
		return rc;
	if (a.common.json)
		rc = print_json(json_object_get(reply, "processes"));
	else {
		printf("%-8s %-8s %-20s %-20s %9s  %s\n", "ID", "PID", "SESSION", "STATUS", "SECONDS", "COMMAND");
		json_array_foreach(json_object_get(reply, "processes"), i, p) {
			/* root sees every user's commands: none of their bytes reaches the terminal raw */
			char id[64], session[64], status[64], cmd[4 * 200 + 1];
			const char *c = json_string_value(json_object_get(p, "command")) ?: "";

			printf("%-8s %-8lld %-20s %-20s %9.1f  %.200s\n",
			       eg_term_safe(json_string_value(json_object_get(p, "id")) ?: "", id, sizeof(id)),
			       (long long)json_integer_value(json_object_get(p, "pid")),
			       eg_term_safe(json_string_value(json_object_get(p, "session")) ?: "", session, sizeof(session)),
			       eg_term_safe(json_string_value(json_object_get(p, "status")) ?: "", status, sizeof(status)),
			       json_integer_value(json_object_get(p, "runtime_ms")) / 1000.0,
			       eg_term_safe(c, cmd, sizeof(cmd)));
		}
		rc = fflush(stdout) ? 1 : 0;
	}
	json_decref(reply);
	return rc;
}

int do_poll(int argc, char **argv)
{
	static const char doc[] =
		"The output of process ID since the last poll, then its status on the last line:\n"
		"'running', 'exited N' or 'killed by SIGNAME'.";
	struct run_args a = {};
	struct sbuf req = {};
	struct jsonw w;
	json_t *reply = NULL;
	int rc;

	if (parse(argc, argv, NULL, "ID", doc, &a) || need_id(&a, 1, 1, "execgate poll ID"))
		return EXIT_USAGE;
	do {
		json_decref(reply);
		sbuf_reset(&req);
		jsonw_init(&w, &req);
		req_id(&w, "poll", a.rest[0]);
		jsonw_end_object(&w);
		reply = call(&a, &req, NULL, 0, -1, &rc);
		if (!reply)
			break;
		if (json_integer_value(json_object_get(reply, "skipped")) > 0 && !a.common.json) {
			fflush(stdout);
			p_warn("%lld bytes of output came and went since the last poll (the log keeps the latest 16 to 32 MiB); "
			       "what follows starts at byte %lld",
			       (long long)json_integer_value(json_object_get(reply, "skipped")),
			       (long long)json_integer_value(json_object_get(reply, "offset")));
		}
		if (a.common.json) {
			print_json(reply);
		} else if (b64_out(reply, stdout) < 0) {
			rc = 1;
		}
	} while (json_is_true(json_object_get(reply, "more")));
	sbuf_free(&req);
	if (!reply)
		return rc;
	if (!a.common.json) {
		if (last_byte != '\n')
			putchar('\n');
		printf("%s\n", json_string_value(json_object_get(reply, "status")));
	}
	json_decref(reply);
	return fflush(stdout) ? 1 : 0;
}

int do_log(int argc, char **argv)
{
	static const char doc[] =
		"The log of a background process: all of it, its last N lines (--tail), or\n"
		"from a byte offset (--offset). The daemon seeks; it never reads the whole file.";
	struct run_args a = {};
	struct sbuf req = {};
	struct jsonw w;
	json_t *reply;
	int64_t off, end = -1;
	bool first = true;
	int rc = 0;

	if (parse(argc, argv, log_options, "ID", doc, &a) || need_id(&a, 1, 1, "execgate log ID [--tail N] [--offset N]"))
		return EXIT_USAGE;
	off = a.offset >= 0 ? a.offset : 0;
	for (;;) {
		sbuf_reset(&req);
		jsonw_init(&w, &req);
		req_id(&w, "log", a.rest[0]);
		if (a.tail >= 0 && end < 0)
			jsonw_int_field(&w, "tail", a.tail);
		else
			jsonw_int_field(&w, "offset", off);
		jsonw_end_object(&w);
		reply = call(&a, &req, NULL, 0, -1, &rc);
		if (!reply)
			break;
		if (end < 0)
			end = json_integer_value(json_object_get(reply, "size"));
		if ((a.tail < 0 || !first) && json_integer_value(json_object_get(reply, "offset")) > off) {
			/* the front of the log was dropped (or rotated away while we read) */
			fflush(stdout);
			p_warn("bytes %lld to %lld of the output are no longer kept (the log keeps the latest 16 to 32 MiB); "
			       "from byte %lld",
			       (long long)off, (long long)json_integer_value(json_object_get(reply, "offset")) - 1,
			       (long long)json_integer_value(json_object_get(reply, "offset")));
		}
		first = false;
		if (b64_out(reply, stdout) < 0) {
			json_decref(reply);
			rc = 1;
			break;
		}
		{
			int64_t from = json_integer_value(json_object_get(reply, "offset"));

			off = json_integer_value(json_object_get(reply, "next_offset"));
			json_decref(reply);
			if (off >= end || off == from)
				break;
		}
	}
	sbuf_free(&req);
	if (fflush(stdout))
		rc = 1;
	return rc;
}

int do_write(int argc, char **argv)
{
	static const char doc[] = "Write TEXT, as it is, to the input of background process ID (its pipe or its pty).";
	struct run_args a = {};
	struct sbuf req = {}, text = {};
	struct jsonw w;
	json_t *reply;
	int rc;

	if (parse(argc, argv, write_options, "ID [TEXT]", doc, &a) ||
	    need_id(&a, a.eof ? 1 : 2, 2, "execgate write ID TEXT [--newline] [--eof]"))
		return EXIT_USAGE;
	if (a.nrest > 1)
		sbuf_puts(&text, a.rest[1]);
	if (a.newline)
		sbuf_putc(&text, '\n');
	jsonw_init(&w, &req);
	req_id(&w, "write", a.rest[0]);
	jsonw_key(&w, "data");
	jsonw_bytes(&w, text.data ? text.data : "", text.len);
	jsonw_bool_field(&w, "eof", a.eof);
	jsonw_end_object(&w);
	sbuf_free(&text);
	reply = call(&a, &req, NULL, 0, -1, &rc);
	sbuf_free(&req);
	json_decref(reply);
	return rc;
}

int do_send_keys(int argc, char **argv)
{
	static const char doc[] =
		"Type KEYS into background process ID (made for --pty processes): each word is a\n"
		"named key (Enter, Tab, Escape, Space, BSpace, Up, Down, Left, Right, Home, End,\n"
		"PageUp, PageDown, Delete, F1-F12), C-x (control), M-x (meta), or literal text.";
	struct run_args a = {};
	struct sbuf req = {};
	struct jsonw w;
	json_t *reply;
	int rc, i;

	if (parse(argc, argv, NULL, "ID KEYS...", doc, &a) || need_id(&a, 2, 1 << 20, "execgate send-keys ID KEYS..."))
		return EXIT_USAGE;
	jsonw_init(&w, &req);
	req_id(&w, "send_keys", a.rest[0]);
	jsonw_key(&w, "keys");
	jsonw_start_array(&w);
	for (i = 1; i < a.nrest; i++)
		jsonw_string(&w, a.rest[i]);
	jsonw_end_array(&w);
	jsonw_end_object(&w);
	reply = call(&a, &req, NULL, 0, -1, &rc);
	sbuf_free(&req);
	json_decref(reply);
	return rc;
}

int do_kill(int argc, char **argv)
{
	static const char doc[] = "Send a signal (TERM by default) to every process of run ID (its cgroup and process group).";
	struct run_args a = {};
	struct sbuf req = {};
	struct jsonw w;
	json_t *reply;
	int rc;

	if (parse(argc, argv, kill_options, "ID", doc, &a) || need_id(&a, 1, 1, "execgate kill ID [--signal SIG]"))
		return EXIT_USAGE;
	jsonw_init(&w, &req);
	req_id(&w, "kill", a.rest[0]);
	if (a.signal)
		jsonw_string_field(&w, "signal", a.signal);
	jsonw_end_object(&w);
	reply = call(&a, &req, NULL, 0, -1, &rc);
	sbuf_free(&req);
	json_decref(reply);
	return rc;
}
