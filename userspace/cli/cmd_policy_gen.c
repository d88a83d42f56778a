// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate policy generate: a default-deny policy that allows what the
 * records show ran (query/generate.c writes it).
 */
#include <argp.h>
#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/commands.h"
#include "util/json.h"
#include "util/log.h"
#include "cli/common.h"
#include "cli/multicall.h"
#include "cli/filters.h"
#include "query/generate.h"
#include "query/query.h"
#include "util/json.h"
#include "ctl/client.h"
#include "enforce/compile.h"
#include "policy/policy.h"
#include "session/boundary.h"
#include "session/resolve.h"
#include "util/jsonw.h"
#include "util/landlock.h"
#include "cli/cmd_policy.h"

/* ---- generate ---- */

struct gen_opts {
	struct cli_common common;
	struct cli_filters fl;
	const char *tree;
	const char *out;
	char *files[257];
	size_t nfiles;
	/* while reading */
	struct eg_generate *g;
	json_t *all;			/* --tree: every exec read, to pick the tree's */
};

static const struct argp_option gen_options[] = {
	{ "tree", 't', "EXEC_ID", 0, "What this exec and every exec below it ran", 2 },
	{ "output", 'o', "FILE", 0, "Write the policy to FILE (default: stdout)", 2 },
	{},
};

static error_t gen_parse(int key, char *arg, struct argp_state *state)
{
	struct gen_opts *o = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
		state->child_inputs[1] = &o->fl;
		break;
	case 't':
		o->tree = arg;
		break;
	case 'o':
		o->out = arg;
		break;
	case ARGP_KEY_ARG:
		if (o->nfiles == 256)
			argp_error(state, "at most 256 files");
		o->files[o->nfiles++] = arg;
		break;
	case ARGP_KEY_END:
		if (!o->tree && !o->fl.f.n_sessions && !o->fl.f.since[0] && !o->fl.f.n_uids && !o->fl.f.n_comm &&
		    !o->fl.f.n_filename && !o->fl.f.n_containers && !o->fl.f.n_pods)
			argp_error(state, "say what to learn from: --session ID, --tree EXEC_ID, or query filters "
				   "(--since, --user, --container, ...)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int gen_line(const char *line, size_t len, void *arg)
{
	struct gen_opts *o = arg;
	json_t *r;

	if (!query_prefilter(&o->fl.f, line, len))
		return 0;
	r = json_load_record(line, len);
	if (json_is_object(r) && query_match(&o->fl.f, r)) {
		if (o->all)
			json_array_append(o->all, r);
		else
			generate_add(o->g, r);
	}
	json_decref(r);
	return 0;
}

/* --tree: the exec and its descendants, by parent_exec_id */
static size_t add_tree(struct gen_opts *o)
{
	json_t *kids = json_object(), *r, *v;
	json_t *todo = json_array(), *seen = json_object();
	size_t i, n = 0;

	json_array_foreach(o->all, i, r) {
		const char *p = json_string_value(json_object_get(r, "parent_exec_id"));

		if (!p)
			continue;
		if (!(v = json_object_get(kids, p)))
			json_object_set_new(kids, p, v = json_array());
		json_array_append_new(v, json_integer(i));
	}
	json_array_foreach(o->all, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "exec_id")) ?: "", o->tree)) {
			json_array_append_new(todo, json_integer(i));
			break;
		}
	while (json_array_size(todo)) {
		json_int_t k = json_integer_value(json_array_get(todo, 0));
		const char *id;

		json_array_remove(todo, 0);
		r = json_array_get(o->all, k);
		generate_add(o->g, r);
		n++;
		id = json_string_value(json_object_get(r, "exec_id"));
		if (!id || json_object_get(seen, id))
			continue;
		json_object_set_new(seen, id, json_true());
		json_array_foreach(json_object_get(kids, id), i, v)
			json_array_append(todo, v);
	}
	json_decref(kids);
	json_decref(todo);
	json_decref(seen);
	return n;
}

int do_generate(int argc, char **argv)
{
	static const char doc[] =
		"Write a policy that allows what the records show ran, and nothing else (default deny).\n"
		"\v"
		"The records are the daemon's (its output and rotated files, as 'execgate query' reads them) "
		"or the FILEs given. Pick them with --session ID (a supervised session), --tree EXEC_ID (an "
		"exec and every exec below it) or query's filters. Programs are allowed by resolved path, at "
		"the depths they ran at (context); their argument lists become args_patterns, generalized where "
		"runs differ only in file names or numbers (a comment shows examples); tools that reach the "
		"network or install software get 'approval'; what was refused or killed is written as "
		"commented-out rules to review. The result passes 'execgate policy check --strict'. Example: "
		"run a build once in a session, generate, then run it under the policy: "
		"execgate exec --policy gen.yaml -- make";
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 },
						      { &cli_filter_argp, 0, NULL, 1 }, {} };
	struct argp argp = { gen_options, gen_parse, "[FILE...]", doc, children, NULL, NULL };
	struct gen_opts o = {};
	struct query_files *files = NULL;
	char path[PATH_MAX], err[PATH_MAX + 512], source[512];
	struct sbuf out = {};
	size_t i;
	int rc = 1, lrc;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	query_filter_ready(&o.fl.f);
	o.g = generate_new();
	if (o.tree)
		o.all = json_array();
	if (!o.g || (o.tree && !o.all))
		goto out;
	if (o.nfiles) {
		if (query_open_files(o.files, o.nfiles, &files, err, sizeof(err))) {
			p_err("%s", err);
			goto out;
		}
	} else if (query_daemon_output(o.common.pin_path, path, sizeof(path), err, sizeof(err))) {
		p_err("%s", err);
		goto out;
	} else if ((lrc = query_output_files(path, &files))) {
		p_err("cannot list the files of %s: %s", path, strerror(-lrc));
		goto out;
	}
	if (query_scan(files, gen_line, &o, err, sizeof(err))) {
		p_err("%s", err);
		goto out;
	}
	/* a policy from part of the records would deny what the rest shows ran: none */
	if (query_files_unread(files)) {
		for (i = 0; i < files->n; i++)
			if (files->v[i].error)
				p_err("%s", files->v[i].error);
		goto out;
	}
	if (o.tree && !add_tree(&o)) {
		p_err("no exec %s in the records read", o.tree);
		goto out;
	}
	if (o.tree)
		snprintf(source, sizeof(source), "the tree of exec %s", o.tree);
	else if (o.fl.f.n_sessions)
		snprintf(source, sizeof(source), "session %s", o.fl.f.sessions[0]);
	else
		snprintf(source, sizeof(source), "the records the query filters selected");
	rc = generate_write(o.g, source, &out);
	if (rc) {
		p_err(rc == -ENOENT ? "no exec in the records read matches: nothing to allow" : "out of memory");
		rc = 1;
		goto out;
	}
	if (o.out) {
		char tmp[PATH_MAX + 8];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", o.out);
		f = fopen(tmp, "we");
		if (!f || fwrite(out.data, 1, out.len, f) != out.len || fclose(f) || rename(tmp, o.out)) {
			p_err("cannot write %s: %s", o.out, strerror(errno));
			unlink(tmp);
			rc = 1;
			goto out;
		}
	} else {
		rc = cli_write(&out) ? 1 : 0;
	}
out:
	query_files_free(files);
	generate_free(o.g);
	json_decref(o.all);
	sbuf_free(&out);
	return rc;
}
