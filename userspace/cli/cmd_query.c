// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate query: the daemon's records, filtered, as text, JSON lines or a process tree; --follow goes on live. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/filters.h"
#include "ctl/client.h"
#include "events/format.h"
#include "query/query.h"
#include "util/json.h"
#include "util/log.h"
#include "util/severity.h"

static const char doc[] =
"Read the daemon's records: its output file and the rotated ones (.gz), oldest first, or the FILEs given."
"\v"
"Without FILE, the files of the running daemon of --pin-path (asked over its control socket), or of the "
"last one that ran (its record in /run/execgate). Filters of one kind are alternatives, filters of different "
"kinds must all hold. TIME is ISO 8601 (2026-01-19T14:30:00Z; without Z: local time; a date alone: its "
"midnight), or 30m, 1h, 2d, 1w ago, today, yesterday. Text shows local time, pid, user, decision, action "
"and the command line, cut to the terminal's width; --json prints the records unchanged, one a line. "
"--tree ID draws the process tree of an exec (its exec_id) or a session (s-...): the ancestors up to the "
"first exec seen, then every descendant with its decision and exit status; refused and killed execs are "
"marked '!'. --follow goes on with new records as the daemon writes them (through its control socket; "
"history first when --since is given). Exit status: 0, 1 on an error, 2 on a usage error.";

enum { OPT_FOLLOW = 0x100, OPT_TREE };

static const struct argp_option options[] = {
	{ "follow", OPT_FOLLOW, NULL, 0, "Go on with new records as they are written, live", 2 },
	{ "tree", OPT_TREE, "EXEC_ID|SESSION", 0, "Draw the process tree of an exec or a session", 2 },
	{},
};

#define MAX_FILES 256

struct query_args {
	struct cli_common common;
	struct cli_filters fl;
	char *files[MAX_FILES + 1];
	size_t nfiles;
	bool follow;
	const char *tree;
		/* while running */
	struct sbuf out;
	unsigned int width;
	uint64_t bad, matched;
	struct query_tree *t;
	struct query_tree_index *ix;
	int pass;			/* --tree: 1 the index, 2 the tree's records */
	/* the live file's last lines, to skip them when they come again live */
	uint64_t *tail;
	size_t tail_n, tail_pos;
};

#define TAIL_LINES 65536

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct query_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->common;
		state->child_inputs[1] = &a->fl;
		break;
	case OPT_FOLLOW:
		a->follow = true;
		break;
	case OPT_TREE:
		a->tree = arg;
		break;
	case ARGP_KEY_ARG:
		if (a->nfiles == MAX_FILES)
			argp_error(state, "at most %d files", MAX_FILES);
		a->files[a->nfiles++] = arg;
		break;
	case ARGP_KEY_END:
		if (a->tree && a->follow)
			argp_error(state, "--tree draws what was written: not with --follow");
		if (a->follow && a->nfiles)
			argp_error(state, "--follow reads the daemon's records live: no FILE with it");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static uint64_t line_hash(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h | 1;
}

static int flush_out(struct query_args *a)
{
	int rc = 0;

	if (a->out.len)
		rc = cli_write(&a->out);
	sbuf_reset(&a->out);
	return rc;
}

/* One record line: the filter, then out as asked. */
static int on_line(const char *line, size_t len, void *arg)
{
	struct query_args *a = arg;
	json_t *r;

	if (a->tail) {
		a->tail[a->tail_pos++ % TAIL_LINES] = line_hash(line, len);
		if (a->tail_n < TAIL_LINES)
			a->tail_n++;
	}
	if (!query_prefilter(&a->fl.f, line, len))
		return 0;
	if (a->pass == 1) {
		query_tree_index_line(a->ix, line, len);
		return 0;
	}
	if (a->pass == 2 && !query_tree_index_wants(a->ix, line, len))
		return 0;
	if (a->common.json && !a->fl.f.needs_parse && !a->tree) {
		/* copied unparsed: a cut line is left out and counted here too */
		if (!query_line_whole(line, len)) {
			a->bad++;
			return 0;
		}
		sbuf_put(&a->out, line, len);
		sbuf_putc(&a->out, '\n');
		a->matched++;
	} else {
		r = json_load_record(line, len);
		if (!json_is_object(r)) {
			a->bad++;
			json_decref(r);
			return 0;
		}
		if (query_match(&a->fl.f, r)) {
			a->matched++;
			if (a->tree) {
				query_tree_add(a->t, r);
			} else if (a->common.json) {
				sbuf_put(&a->out, line, len);
				sbuf_putc(&a->out, '\n');
			} else {
				query_text(&a->out, r, a->width);
			}
		}
		json_decref(r);
	}
	if (a->out.len >= (1u << 20) && flush_out(a))
		return -EPIPE;
	return 0;
}

static bool seen_before(const struct query_args *a, const char *line, size_t len)
{
	uint64_t h = line_hash(line, len);
	size_t i;

	for (i = 0; i < a->tail_n; i++)
		if (a->tail[i] == h)
			return true;
	return false;
}

/*
 * While --since's history is read, the stream is read into memory beside
 * it: a follower that does not read is dropped by the daemon past 4 MiB
 * behind, which a long history on a busy host reached.
 */
#define PENDING_MAX	(256u << 20)	/* the stream held while the history is read */

struct pending {
	int fd;
	pthread_t th;
	pthread_mutex_t mu;
	struct sbuf buf;
	bool stop, eof, full;
};

static void *pending_main(void *arg)
{
	struct pending *pd = arg;
	char tmp[65536];

	for (;;) {
		struct pollfd p = { .fd = pd->fd, .events = POLLIN };
		bool stop;
		ssize_t n;

		pthread_mutex_lock(&pd->mu);
		stop = pd->stop;
		pthread_mutex_unlock(&pd->mu);
		if (stop)
			break;
		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(pd->fd, tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		pthread_mutex_lock(&pd->mu);
		if (n <= 0)
			pd->eof = true;
		else if (pd->buf.len + n > PENDING_MAX)
			pd->full = true;
		else
			sbuf_put(&pd->buf, tmp, n);
		stop = pd->eof || pd->full;
		pthread_mutex_unlock(&pd->mu);
		if (stop)
			break;
	}
	return NULL;
}

/* The daemon's records from now on (pd: what was held while the history was read); the history's last lines, if any, are not shown twice. */
static int follow(struct query_args *a, int fd, struct pending *pd)
{
	struct sbuf in = {};
	bool skipping = a->tail_n > 0, eof = false, held = false;
	int rc = 0;

	if (pd) {
		if (pd->full) {
			p_err("the daemon's records came faster than the history could be read (more than %u MiB "
			      "held): try a later --since", PENDING_MAX >> 20);
			sbuf_free(&pd->buf);
			return 1;
		}
		in = pd->buf;
		pd->buf = (struct sbuf){};
		eof = pd->eof;
		held = in.len > 0;
	}
	for (;;) {
		char *nl, *p;
		ssize_t n;

		if (!held) {
			if (sbuf_reserve(&in, 65536)) {
				rc = 1;
				break;
			}
			n = eof ? 0 : read(fd, in.data + in.len, 65536);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				p_err("the daemon closed the connection (it stopped)");
				rc = 1;
				break;
			}
			in.len += n;
		}
		held = false;
		for (p = in.data; (nl = memchr(p, '\n', in.data + in.len - p)); p = nl + 1) {
			size_t len = nl - p;

			if (len > 9 && !memcmp(p, "{\"event\":", 9)) {
				json_t *ev = json_loadb(p, len, 0, NULL);

				p_err("the daemon dropped this follower: %s",
				      json_string_value(json_object_get(ev, "reason")) ?: "no reason given");
				json_decref(ev);
				flush_out(a);
				sbuf_free(&in);
				return 1;
			}
			if (skipping && seen_before(a, p, len))
				continue;
			skipping = false;
			if (on_line(p, len, a)) {
				rc = 1;
				goto out;
			}
		}
		memmove(in.data, p, in.data + in.len - p);
		in.len = in.data + in.len - p;
		if (flush_out(a)) {
			rc = 1;
			break;
		}
	}
out:
	sbuf_free(&in);
	return rc;
}

static int start_follow(struct query_args *a, int *ret_fd)
{
	static const char req[] = "{\"op\":\"follow\"}";
	struct sbuf line = {};
	json_t *reply;
	int fd, rc;

	fd = ctl_connect(a->common.pin_path);
	if (fd < 0) {
		p_err("%s", ctl_connect_hint(fd));
		return fd == -ENOENT || fd == -ECONNREFUSED ? 3 : 1;
	}
	rc = ctl_send_request(fd, req, sizeof(req) - 1, NULL, 0);
	if (!rc)
		rc = ctl_read_line(fd, &line, 10000, 1 << 20);
	reply = rc ? NULL : json_loadb(line.data, line.len, 0, NULL);
	sbuf_free(&line);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		p_err("%s", json_string_value(json_object_get(reply, "error")) ?: "the daemon did not answer");
		json_decref(reply);
		close(fd);
		return 1;
	}
	json_decref(reply);
	*ret_fd = fd;
	return 0;
}

int do_query(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 }, { &cli_filter_argp, 0, NULL, 1 }, {} };
	struct argp argp = { options, parse_opt, "[FILE...]", doc, children, NULL, NULL };
	struct query_args a = {};
	struct query_files *files = NULL;
	char path[PATH_MAX], err[PATH_MAX + 512];
	size_t i;
	struct winsize ws;
	struct pending pd = { .fd = -1 };
	bool pd_running = false;
	int rc = 0, fd = -1;

	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return EXIT_USAGE;
	query_filter_ready(&a.fl.f);
	if (!a.common.json && isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40)
		a.width = ws.ws_col;
	if (a.follow) {
		/* connected first: nothing written between the history and the stream is missed */
		rc = start_follow(&a, &fd);
		if (rc)
			return rc;
		if (!a.fl.since_arg)
			return follow(&a, fd, NULL);
		a.tail = calloc(TAIL_LINES, sizeof(*a.tail));
		if (!a.tail)
			return 1;
		/* the stream is read beside the history: the daemon drops a follower that does not read */
		pd.fd = fd;
		pthread_mutex_init(&pd.mu, NULL);
		if (pthread_create(&pd.th, NULL, pending_main, &pd)) {
			p_err("cannot start a thread");
			return 1;
		}
		pd_running = true;
	}
	/* every file opened now: the query reads them as they are at its start */
	if (a.nfiles) {
		if (query_open_files(a.files, a.nfiles, &files, err, sizeof(err))) {
			p_err("%s", err);
			rc = 1;
			goto out;
		}
	} else {
		if (query_daemon_output(a.common.pin_path, path, sizeof(path), err, sizeof(err))) {
			p_err("%s", err);
			rc = 1;
			goto out;
		}
		rc = query_output_files(path, &files);
		if (rc) {
			p_err("cannot list the files of %s: %s", path, strerror(-rc));
			rc = 1;
			goto out;
		}
	}
	if (a.tree) {
		/* two passes: the index of every exec, then only the records of the tree's */
		a.t = query_tree_new();
		a.ix = query_tree_index_new();
		if (!a.t || !a.ix) {
			rc = 1;
			goto out;
		}
		a.pass = 1;
		if (query_scan(files, on_line, &a, err, sizeof(err))) {
			p_err("%s", err);
			rc = 1;
			goto out;
		}
		if (query_tree_index_select(a.ix, a.tree)) {
			p_err("no exec or session %s in the records read", a.tree);
			rc = 1;
			goto out;
		}
		a.pass = 2;
	}
	if (query_scan(files, on_line, &a, err, sizeof(err))) {
		if (errno != EPIPE)
			p_err("%s", err);
		rc = 1;
		goto out;
	}
	if (a.tree) {
		if (query_tree_print(a.t, a.tree, &a.out, a.width, isatty(STDOUT_FILENO))) {
			p_err("no exec or session %s in the records read", a.tree);
			rc = 1;
		}
	}
	if (flush_out(&a))
		rc = 1;
	if (a.bad)
		p_warn("%llu lines were not JSON records: left out", (unsigned long long)a.bad);
	/* what was read is out; a file that could not be read whole still fails the query */
	for (i = 0; i < files->n; i++)
		if (files->v[i].error)
			p_warn("%s", files->v[i].error);
	if (query_files_unread(files))
		rc = 1;
	if (pd_running) {
		pthread_mutex_lock(&pd.mu);
		pd.stop = true;
		pthread_mutex_unlock(&pd.mu);
		pthread_join(pd.th, NULL);
		pd_running = false;
	}
	if (!rc && a.follow)
		rc = follow(&a, fd, &pd);
out:
	if (pd_running) {
		pthread_mutex_lock(&pd.mu);
		pd.stop = true;
		pthread_mutex_unlock(&pd.mu);
		pthread_join(pd.th, NULL);
	}
	sbuf_free(&pd.buf);
	if (fd >= 0)
		close(fd);
	query_files_free(files);
	query_tree_free(a.t);
	query_tree_index_free(a.ix);
	free(a.tail);
	sbuf_free(&a.out);
	return rc;
}
