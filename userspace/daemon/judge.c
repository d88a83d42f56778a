// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "daemon/judge.h"
#include "execgate.h"

static const char *cstr(struct sbuf *b, const struct eg_str *s)
{
	sbuf_reset(b);
	sbuf_put(b, s->p, s->len);
	return sbuf_cstr(b);
}

static int grow(struct eg_judge *j, size_t n)
{
	const char **v;

	if (n <= j->argvp_cap)
		return 0;
	v = realloc(j->argvp, (n + 64) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	j->argvp = v;
	j->argvp_cap = n + 64;
	return 0;
}

static bool same(const struct eg_str *a, const struct eg_str *b)
{
	return a->len == b->len && !memcmp(a->p, b->p, a->len);
}

/* What cannot be judged is an error (the policy's on_error), merged into ret. */
static void error_verdict(struct eg_verdict *ret, const char *message, const char *error)
{
	struct eg_verdict v = { .decision = EG_DECISION_ERROR, .rule = "on_error",
				.message = message, .error = error, .rule_index = -1 };

	policy_verdict_merge(ret, &v);
}

/* One program's verdict: merged into *ret, kept for the event. */
static void judge_one(struct eg_judge *j, const struct eg_policy *p, struct eg_exec_req *req,
		      const char *role, struct eg_verdict *ret, bool first)
{
	struct eg_program_verdict *pv;
	struct eg_verdict v;

	policy_eval(p, req, &v);
	if (first)
		*ret = v;
	else
		policy_verdict_merge(ret, &v);
	if (j->n_progs >= JUDGE_PROGRAMS_MAX)
		return;
	pv = &j->progs[j->n_progs++];
	pv->role = role;
	pv->filename = (struct eg_str){ req->filename, strlen(req->filename) };
	pv->decision = eg_decision_name(v.decision);
	pv->rule = v.rule;
}

/*
 * Where the script's caller's arguments start: the kernel replaced argv[0]
 * by [interpreter, optional argument, (each middle script of a chain and
 * its optional argument,) the script's path as spelled]; 0 when argv does
 * not look like that. The same window as the kernel's (bpf/kexec.bpf.h).
 */
static size_t script_skip(const struct eg_record *r)
{
	size_t i, words = 2 * ((r->h.chain_len ? EG_CHAIN_MAX : 0) + 1) + 1;

	for (i = 1; i < words && i < r->argv_kept; i++)
		if (same(&r->argv[i], &r->requested))
			return i;
	return 0;
}

int judge_record(struct eg_judge *j, const struct eg_policy *p, const struct eg_record *r,
		 const char *cgroup, bool session, struct eg_verdict *ret)
{
	const struct eg_event *h = &r->h;
	struct eg_eval_budget budget = {};
	struct eg_exec_req req = {};
	char exe[32];
	size_t i, skip;
	bool script = h->type == EG_EVENT_EXEC && (h->flags & EG_F_SCRIPT);

	j->n_progs = 0;
	if (grow(j, r->argv_kept + 2)) {
		*ret = (struct eg_verdict){ .decision = EG_DECISION_ERROR, .rule = "on_error",
					    .message = "out of memory", .error = "out of memory",
					    .rule_index = -1 };
		return -ENOMEM;
	}
	/* kept arguments are NUL terminated in the record itself */
	for (i = 0; i < r->argv_kept; i++)
		j->argvp[i] = r->argv[i].p;
	j->argvp[i] = NULL;

	req.depth = h->depth;
	req.depth_known = h->flags & EG_F_DEPTH_KNOWN;
	req.in_container = h->flags & EG_F_CONTAINER;
	req.container_depth = h->container_depth;
	req.context = h->context;
	req.context_depth = h->context_depth;
	req.shells = h->shells;
	req.cgroup = cgroup;
	req.euid = h->euid;
	req.foreign_ns = j->host_mnt_ns && h->mnt_ns && h->mnt_ns != j->host_mnt_ns;
	/* any path judged that lost its leading part: a deny glob on that part would miss it */
	req.truncated = r->argv_truncated || r->filename_truncated || r->script_truncated ||
			r->requested_truncated || r->chain_truncated ||
			(h->flags & (EG_F_ARGV_FAULT | EG_F_FILENAME_FAULT));
	req.apply_on_truncated = session;
	req.budget = &budget;

	/* the file that runs (the interpreter, for a script), with the argv it got */
	req.filename = cstr(&j->fname, &r->filename);
	req.user_mount = h->flags2 & EG_F2_USER_MOUNT;
	if (h->type == EG_EVENT_LOADED) {
		/* the program a loader mapped, reported alone (its exec was written without it) */
		req.requested = cstr(&j->req, &r->requested);
		req.dev = h->dev;
		req.ino = h->ino;
		req.size = h->size;
	} else if (h->type == EG_EVENT_EXEC) {
		req.requested = script ? cstr(&j->req, &r->interp) : cstr(&j->req, &r->requested);
		/* the file under an overlay view is the one a literal path names */
		req.dev = (h->flags & EG_F_BACKING) ? h->backing_dev : h->dev;
		req.ino = (h->flags & EG_F_BACKING) ? h->backing_ino : h->ino;
		req.size = h->size;
		/*
		 * The content, of the file the record names (identity checked):
		 * the same answer whether the process lived 1 ms or a minute.
		 * A memfd has no path: its image, while it lives; another mount
		 * namespace's path, through the process's root.
		 */
		if (h->flags & EG_F_ANON_FILE) {
			snprintf(exe, sizeof(exe), "/proc/%u/exe", h->pid);
			req.content_path = exe;
		} else if (req.foreign_ns) {
			sbuf_reset(&j->content);
			sbuf_printf(&j->content, "/proc/%u/root%s", h->pid, req.filename);
			req.content_path = sbuf_cstr(&j->content);
		}
	}
	req.argv = j->argvp;
	req.argc = r->argv_kept;
	judge_one(j, p, &req, script ? "interpreter" : (h->flags & EG_F_LOADER) ? "loader" : "program",
		  ret, true);
	/* an overlay view whose file behind it the kernel could not read: the file a literal path names may be it */
	if (h->type == EG_EVENT_EXEC && (h->flags2 & EG_F2_BACKING_UNKNOWN))
		error_verdict(ret, "an overlay view whose file behind it could not be read", "backing unknown");
	/* a 32-bit loader run as the command: what it maps is not seen (compat mmap2) */
	if (h->type == EG_EVENT_EXEC && (h->flags & EG_F_LOADER) && (h->flags2 & EG_F2_LOADER_32))
		error_verdict(ret, "what a 32-bit dynamic loader maps is not seen", "32-bit loader");

	/* a loader run as the command: the program it maps is judged as the program */
	if (h->type == EG_EVENT_EXEC && (h->flags & EG_F_LOADER)) {
		unsigned int t = h->loader_arg;
		bool known = t && t < r->argv_kept;

		if (!r->loaded && !known) {
			if (t == EG_LOADER_ARG_UNKNOWN)
				error_verdict(ret, "which program the dynamic loader runs cannot be told",
					      "loader program unknown");
			return 0;
		}
		req.requested = known ? j->argvp[t] : NULL;
		if (r->loaded && r->loaded->filename.len) {
			/* what the kernel saw it map */
			req.filename = cstr(&j->target, &r->loaded->filename);
			req.user_mount = r->loaded->h.flags2 & EG_F2_USER_MOUNT;
			req.dev = r->loaded->h.dev;
			req.ino = r->loaded->h.ino;
			req.size = r->loaded->h.size;
		} else {
			/* not mapped (yet): its name, from the working directory for a relative one */
			sbuf_reset(&j->target);
			if (j->argvp[t][0] != '/') {
				sbuf_put(&j->target, r->cwd.p, r->cwd.len);
				if (!r->cwd.len || r->cwd.p[r->cwd.len - 1] != '/')
					sbuf_putc(&j->target, '/');
			}
			sbuf_puts(&j->target, j->argvp[t]);
			req.filename = sbuf_cstr(&j->target);
			req.user_mount = false;
			req.dev = 0;
			req.ino = 0;
			req.size = 0;
		}
		req.content_path = NULL;
		/* its own argv from its name on (unknown: from the loader's first argument) */
		if (!known)
			t = r->argv_kept > 1 ? 1 : r->argv_kept;
		req.argv = j->argvp + t;
		req.argc = r->argv_kept - t;
		judge_one(j, p, &req, "program", ret, false);
		return 0;
	}
	if (!script)
		return 0;

	/*
	 * The script, by its own path, with the argv its caller passed: the
	 * kernel replaced argv[0] by [interpreter, optional argument, the
	 * script's path as spelled], so the caller's arguments follow it.
	 */
	skip = script_skip(r);
	if (!skip)
		return 0;	/* an argv that does not look like a script's: nothing more to judge */
	req.filename = r->script.len ? cstr(&j->sname, &r->script) : cstr(&j->sname, &r->requested);
	/* as the kernel judges it: a script not found is its path as spelled */
	req.user_mount = !r->script.len || (h->flags2 & EG_F2_SCRIPT_USER_MOUNT);
	req.requested = cstr(&j->sreq, &r->requested);
	/* the script's own identity, when the kernel found it: a copy by another name is the same file */
	req.dev = (h->flags & EG_F_SCRIPT_FOUND) ? h->script_dev : 0;
	req.ino = (h->flags & EG_F_SCRIPT_FOUND) ? h->script_ino : 0;
	req.size = 0;
	req.content_path = NULL;
	req.argv = j->argvp + skip;
	req.argc = r->argv_kept - skip;
	judge_one(j, p, &req, "script", ret, false);

	/*
	 * The scripts between it and the interpreter, each by its file, with
	 * the caller's argv too (as the kernel judges them: how each '#!'
	 * line spelled the next is not in the record).
	 */
	for (i = 0; i < r->chain_n; i++) {
		req.filename = cstr(&j->chain[i], &r->chain[i].path);
		req.requested = NULL;
		req.dev = r->chain[i].dev;
		req.ino = r->chain[i].ino;
		req.user_mount = r->chain[i].flags & EG_CE_USER_MOUNT;
		judge_one(j, p, &req, "chain", ret, false);
	}
	/* a chain the record could not hold whole: its missing levels cannot be judged */
	if (h->flags & EG_F_CHAIN_CUT)
		error_verdict(ret, "a '#!' chain longer than the record holds", "chain cut");
	return 0;
}

void judge_free(struct eg_judge *j)
{
	free(j->argvp);
	sbuf_free(&j->fname);
	sbuf_free(&j->req);
	sbuf_free(&j->sname);
	sbuf_free(&j->sreq);
	sbuf_free(&j->interp);
	sbuf_free(&j->target);
	sbuf_free(&j->content);
	for (size_t i = 0; i < EG_CHAIN_MAX; i++)
		sbuf_free(&j->chain[i]);
	memset(j, 0, sizeof(*j));
}
