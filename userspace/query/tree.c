// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The process tree of an exec or a session, from exec records linked by
 * parent_exec_id, their exit records (status) and the refused attempts
 * (exec_failed records the policy denied or the kernel refused). Nodes
 * keep only what a line shows, so a whole day's log fits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "query/query.h"
#include "query/view.h"

struct node {
	char *id, *parent;		/* exec ids; id NULL for a refused attempt */
	char *line;			/* time, user, decision, action: the left part */
	char *cmd;
	char *exit;			/* "exit 0 after 1.2s", NULL while unknown */
	char *session;
	char *time;
	bool bad;			/* denied, killed, blocked: stands out */
	size_t *kids, nkids, capkids;
};

struct query_tree {
	struct node *v;
	size_t n, cap;
	json_t *by_id;			/* exec_id -> index */
	json_t *exits;			/* exec_id -> "exit ..." for exits read before their exec */
};

struct query_tree *query_tree_new(void)
{
	struct query_tree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->by_id = json_object();
	t->exits = json_object();
	return t;
}

void query_tree_free(struct query_tree *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++) {
		free(t->v[i].id);
		free(t->v[i].parent);
		free(t->v[i].line);
		free(t->v[i].cmd);
		free(t->v[i].exit);
		free(t->v[i].session);
		free(t->v[i].time);
		free(t->v[i].kids);
	}
	free(t->v);
	json_decref(t->by_id);
	json_decref(t->exits);
	free(t);
}

static char *dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static bool bad(const json_t *r)
{
	const char *d = json_string_value(json_object_get(r, "decision"));
	const char *a = json_string_value(json_object_get(r, "action"));

	return (d && !strcmp(d, "deny")) ||
	       (a && (!strcmp(a, "killed") || !strcmp(a, "blocked") || !strcmp(a, "would-block")));
}

void query_tree_add(struct query_tree *t, const json_t *r)
{
	const char *type = json_string_value(json_object_get(r, "type"));
	const char *id = json_string_value(json_object_get(r, "exec_id"));
	const char *dec, *act;
	char tm[40], user[40];
	struct sbuf b = {};
	struct node *nd;
	json_t *ix;

	if (!type)
		return;
	if (!strcmp(type, "exit")) {
		view_exit(&b, r);
		if (id && (ix = json_object_get(t->by_id, id))) {
			free(t->v[json_integer_value(ix)].exit);
			t->v[json_integer_value(ix)].exit = b.oom ? NULL : strdup(sbuf_cstr(&b));
		} else if (id) {
			json_object_set_new(t->exits, id, json_string(sbuf_cstr(&b)));
		}
		sbuf_free(&b);
		return;
	}
	if (strcmp(type, "exec") && strcmp(type, "exec_failed"))
		return;
	/* an attempt that failed is shown when it was refused, not when a PATH search missed */
	if (!strcmp(type, "exec_failed") && !bad(r))
		return;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct node *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return;
		t->v = v;
		t->cap = cap;
	}
	nd = &t->v[t->n];
	memset(nd, 0, sizeof(*nd));
	dec = json_string_value(json_object_get(r, "decision"));
	act = json_string_value(json_object_get(r, "action"));
	view_time(r, tm, sizeof(tm));
	sbuf_printf(&b, "%s %-8.8s %-8s %-11s", tm, view_user(r, user, sizeof(user)), dec ? dec : "-",
		    act ? act : "-");
	nd->line = strdup(sbuf_cstr(&b));
	sbuf_reset(&b);
	if (!strcmp(type, "exec_failed"))
		sbuf_printf(&b, "[%s] ", json_string_value(json_object_get(r, "error")) ?: "refused");
	view_command(&b, r);
	nd->cmd = strdup(sbuf_cstr(&b));
	sbuf_free(&b);
	nd->id = !strcmp(type, "exec") ? dup(id) : NULL;
	nd->parent = dup(json_string_value(json_object_get(r, "parent_exec_id")));
	nd->session = dup(json_string_value(json_object_get(r, "session")));
	nd->time = dup(json_string_value(json_object_get(r, "time")));
	nd->bad = bad(r);
	if (nd->id) {
		json_t *x = json_object_get(t->exits, nd->id);

		if (x) {
			nd->exit = strdup(json_string_value(x));
			json_object_del(t->exits, nd->id);
		}
		json_object_set_new(t->by_id, nd->id, json_integer(t->n));
	}
	t->n++;
}

static long find(const struct query_tree *t, const char *id)
{
	json_t *ix = id ? json_object_get(t->by_id, id) : NULL;

	return ix ? (long)json_integer_value(ix) : -1;
}

static void print_node(struct query_tree *t, size_t i, const char *prefix, bool last, bool top, struct sbuf *b,
		       unsigned int width, bool color)
{
	struct node *nd = &t->v[i];
	size_t start = b->len, k;
	struct sbuf p = {};

	if (nd->bad && color)
		sbuf_puts(b, "\033[1;31m");
	sbuf_printf(b, "%s %s %s%s%s", nd->bad ? "!" : " ", nd->line, prefix, top ? "" : last ? "└─ " : "├─ ",
		    nd->cmd);
	if (nd->exit)
		sbuf_printf(b, "  [%s]", nd->exit);
	else if (nd->id)
		sbuf_puts(b, "  [running or exit not seen]");
	view_fit(b, start, width);
	if (nd->bad && color)
		sbuf_puts(b, "\033[0m");
	sbuf_putc(b, '\n');
	sbuf_puts(&p, prefix);
	if (!top)
		sbuf_puts(&p, last ? "   " : "│  ");
	for (k = 0; k < nd->nkids; k++)
		print_node(t, nd->kids[k], sbuf_cstr(&p), k + 1 == nd->nkids, false, b, width, color);
	sbuf_free(&p);
}

static int by_time(const void *a, const void *b, void *arg)
{
	const struct query_tree *t = arg;
	const char *x = t->v[*(const size_t *)a].time, *y = t->v[*(const size_t *)b].time;

	return strcmp(x ? x : "", y ? y : "");
}

static void link_children(struct query_tree *t)
{
	size_t i;
	long p;

	for (i = 0; i < t->n; i++) {
		struct node *pn;

		p = find(t, t->v[i].parent);
		if (p < 0 || (size_t)p == i)
			continue;
		pn = &t->v[p];
		if (pn->nkids == pn->capkids) {
			size_t cap = pn->capkids ? pn->capkids * 2 : 4, *k = realloc(pn->kids, cap * sizeof(*k));

			if (!k)
				continue;
			pn->kids = k;
			pn->capkids = cap;
		}
		pn->kids[pn->nkids++] = i;
	}
	for (i = 0; i < t->n; i++)
		qsort_r(t->v[i].kids, t->v[i].nkids, sizeof(size_t), by_time, t);
}

/* The ancestors of node i, oldest first, each on a line of its own, indented. */
static size_t print_ancestors(struct query_tree *t, size_t i, struct sbuf *b, unsigned int width, bool color,
			      struct sbuf *prefix)
{
	long chain[256];
	size_t n = 0, k;
	long p = find(t, t->v[i].parent);

	while (p >= 0 && n < 256) {
		chain[n++] = p;
		p = find(t, t->v[p].parent);
	}
	for (k = n; k-- > 0;) {
		struct node *nd = &t->v[chain[k]];
		size_t start = b->len;

		sbuf_printf(b, "%s %s %s%s%s", nd->bad ? "!" : " ", nd->line, sbuf_cstr(prefix),
			    k + 1 == n ? "" : "└─ ", nd->cmd);
		if (nd->exit)
			sbuf_printf(b, "  [%s]", nd->exit);
		view_fit(b, start, width);
		sbuf_putc(b, '\n');
		if (k + 1 != n)
			sbuf_puts(prefix, "   ");
		(void)color;
	}
	return n;
}

int query_tree_print(struct query_tree *t, const char *root, struct sbuf *b, unsigned int width, bool color)
{
	struct sbuf prefix = {};
	long r = find(t, root);
	size_t i, shown = 0;

	link_children(t);
	if (r >= 0) {
		if (print_ancestors(t, r, b, width, color, &prefix))
			print_node(t, r, sbuf_cstr(&prefix), true, false, b, width, color);
		else
			print_node(t, r, "", true, true, b, width, color);
		sbuf_free(&prefix);
		return 0;
	}
	/* a session: each of its execs whose parent is outside it, under that parent's ancestors */
	for (i = 0; i < t->n; i++) {
		long p;

		if (!t->v[i].session || strcmp(t->v[i].session, root))
			continue;
		p = find(t, t->v[i].parent);
		if (p >= 0 && t->v[p].session && !strcmp(t->v[p].session, root))
			continue;
		sbuf_reset(&prefix);
		if (!shown && print_ancestors(t, i, b, width, color, &prefix))
			print_node(t, i, sbuf_cstr(&prefix), true, false, b, width, color);
		else
			print_node(t, i, "", true, true, b, width, color);
		shown++;
	}
	sbuf_free(&prefix);
	return shown ? 0 : -ENOENT;
}
