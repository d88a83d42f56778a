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

int judge_record(struct eg_judge *j, const struct eg_policy *p, const struct eg_record *r,
		 const char *cgroup, bool session, struct eg_verdict *ret)
{
	const struct eg_event *h = &r->h;
	struct eg_eval_budget budget = {};
	struct eg_exec_req req = {};
	struct eg_verdict v;
	char exe[32];
	size_t i, skip;

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
	req.cgroup = cgroup;
	req.euid = h->euid;
	req.foreign_ns = j->host_mnt_ns && h->mnt_ns && h->mnt_ns != j->host_mnt_ns;
	req.truncated = r->argv_truncated || r->filename_truncated ||
			(h->flags & (EG_F_ARGV_FAULT | EG_F_FILENAME_FAULT));
	req.apply_on_truncated = session;
	req.budget = &budget;

	/* the file that runs (the interpreter, for a script), with the argv it got */
	req.filename = cstr(&j->fname, &r->filename);
	if (h->type == EG_EVENT_EXEC) {
		req.requested = (h->flags & EG_F_SCRIPT) ? cstr(&j->req, &r->interp)
							 : cstr(&j->req, &r->requested);
		req.dev = h->dev;
		req.ino = h->ino;
		req.size = h->size;
		/* the new image, while it lives: also for a memfd or a file in another namespace */
		snprintf(exe, sizeof(exe), "/proc/%u/exe", h->pid);
		req.content_path = exe;
	}
	req.argv = j->argvp;
	req.argc = r->argv_kept;
	policy_eval(p, &req, ret);
	if (h->type != EG_EVENT_EXEC || !(h->flags & EG_F_SCRIPT))
		return 0;

	/*
	 * The script, by its own path, with the argv its caller passed: the
	 * kernel replaced argv[0] by [interpreter, optional argument, the
	 * script's path as spelled], so the caller's arguments follow it.
	 */
	skip = 0;
	for (i = 1; i <= 2 && i < r->argv_kept; i++) {
		if (same(&r->argv[i], &r->requested)) {
			skip = i;
			break;
		}
	}
	if (!skip)
		return 0;	/* an argv that does not look like a script's: nothing more to judge */
	req.filename = r->script.len ? cstr(&j->sname, &r->script) : cstr(&j->sname, &r->requested);
	req.requested = cstr(&j->sreq, &r->requested);
	/* the script's own identity, when the kernel found it: a copy by another name is the same file */
	req.dev = (h->flags & EG_F_SCRIPT_FOUND) ? h->script_dev : 0;
	req.ino = (h->flags & EG_F_SCRIPT_FOUND) ? h->script_ino : 0;
	req.size = 0;
	req.content_path = NULL;
	req.argv = j->argvp + skip;
	req.argc = r->argv_kept - skip;
	policy_eval(p, &req, &v);
	policy_verdict_merge(ret, &v);
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
	memset(j, 0, sizeof(*j));
}
