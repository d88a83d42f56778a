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
#include "util/termsafe.h"

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
	char tm[80], user[40], dec_s[40], act_s[40], safe[256];
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
	dec = eg_term_safe(json_string_value(json_object_get(r, "decision")), dec_s, sizeof(dec_s));
	act = eg_term_safe(json_string_value(json_object_get(r, "action")), act_s, sizeof(act_s));
	view_time(r, tm, sizeof(tm));
	sbuf_printf(&b, "%s %-8.8s %-8s %-11s", tm, view_user(r, user, sizeof(user)), dec ? dec : "-",
		    act ? act : "-");
	nd->line = strdup(sbuf_cstr(&b));
	sbuf_reset(&b);
	if (!strcmp(type, "exec_failed"))
		sbuf_printf(&b, "[%s] ", eg_term_safe(json_string_value(json_object_get(r, "error")), safe, sizeof(safe))
					 ?: "refused");
	/* where an agent context starts: its identity's exec (or a process put in it from /proc) */
	{
		json_t *c = json_object_get(r, "context");
		const char *cn = eg_term_safe(json_string_value(json_object_get(c, "name")), safe, sizeof(safe));
		json_t *cd = json_object_get(c, "depth");

		if (cn && (json_integer_value(cd) == 0 || json_is_true(json_object_get(c, "inferred"))))
			sbuf_printf(&b, "[context %s%s] ", cn,
				    json_integer_value(cd) == 0 ? "" : ", inferred");
	}
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

/*
 * Levels drawn below the root: one call and one prefix each, so a chain of
 * 100,000 execs (or parent links that loop, in a file made up) would take
 * the stack; what is deeper is named, to be drawn with --tree of its own.
 */
#define TREE_MAX_DEPTH	200

static void print_node(struct query_tree *t, size_t i, const char *prefix, bool last, bool top, struct sbuf *b,
		       unsigned int width, bool color, unsigned int depth)
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
	if (nd->nkids && depth >= TREE_MAX_DEPTH) {
		start = b->len;
		sbuf_printf(b, "  %*s %s└─ ... deeper than %d levels: --tree ", 23 + 1 + 8 + 1 + 8 + 1 + 11, "",
			    sbuf_cstr(&p), TREE_MAX_DEPTH);
		/* the id is the record's: shown as an argument is, typed as the shell needs it */
		eg_put_arg(b, nd->id ? nd->id : "?");
		sbuf_puts(b, " draws them");
		view_fit(b, start, width);
		sbuf_putc(b, '\n');
		nd->nkids = 0;	/* drawn once, even where parent links loop */
	}
	for (k = 0; k < nd->nkids; k++)
		print_node(t, nd->kids[k], sbuf_cstr(&p), k + 1 == nd->nkids, false, b, width, color, depth + 1);
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
		if (t->v[i].nkids > 1)
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
			print_node(t, r, sbuf_cstr(&prefix), true, false, b, width, color, 0);
		else
			print_node(t, r, "", true, true, b, width, color, 0);
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
			print_node(t, i, sbuf_cstr(&prefix), true, false, b, width, color, 0);
		else
			print_node(t, i, "", true, true, b, width, color, 0);
		shown++;
	}
	sbuf_free(&prefix);
	return shown ? 0 : -ENOENT;
}

/* ---- the index: which records a tree needs, from their raw bytes -------- */

/*
 * A tree needs every exec of a log to find an exec's descendants, but only
 * a few whole records. So a first pass keeps each exec's id, its parent's
 * and its session, read with memmem from the line (no JSON parse), the
 * tree is found in that index, and a second pass parses only the records
 * of its execs.
 */
struct xid {
	uint64_t ns;
	uint32_t pid;
};

struct inode_ {
	struct xid id, parent;
	uint32_t session;		/* the hex after "s-"; 0: none */
	int32_t next;			/* hash chain */
	bool want;
};

struct query_tree_index {
	struct inode_ *v;
	size_t n, cap;
	int32_t *buckets;
	size_t nb;			/* a power of two */
};

static bool parse_xid(const char *p, const char *end, struct xid *ret)
{
	uint64_t pid = 0, ns = 0;
	const char *s = p;

	while (p < end && *p >= '0' && *p <= '9')
		pid = pid * 10 + (*p++ - '0');
	if (p == s || p >= end || *p != ':' || pid > UINT32_MAX)
		return false;
	s = ++p;
	while (p < end && *p >= '0' && *p <= '9')
		ns = ns * 10 + (*p++ - '0');
	if (p == s || p >= end || *p != '"')
		return false;
	ret->pid = pid;
	ret->ns = ns;
	return true;
}

/* The string value of "key":"..." (key with its quotes, colon and opening quote) */
static bool raw_xid(const char *line, size_t len, const char *key, size_t kl, struct xid *ret)
{
	const char *p = memmem(line, len, key, kl);

	return p && parse_xid(p + kl, line + len, ret);
}

static uint32_t raw_session(const char *line, size_t len)
{
	const char *p = memmem(line, len, "\"session\":\"s-", 13);
	uint32_t v = 0;

	if (!p)
		return 0;
	for (p += 13; p < line + len && *p != '"'; p++)
		v = v * 16 + (*p >= 'a' ? *p - 'a' + 10 : *p - '0');
	return v;
}

static size_t xhash(struct xid x, size_t nb)
{
	return ((x.ns ^ ((uint64_t)x.pid << 40)) * 0x9e3779b97f4a7c15ull >> 20) & (nb - 1);
}

static long ifind(const struct query_tree_index *ix, struct xid x)
{
	int32_t i;

	if (!ix->nb)
		return -1;
	for (i = ix->buckets[xhash(x, ix->nb)]; i >= 0; i = ix->v[i].next)
		if (ix->v[i].id.pid == x.pid && ix->v[i].id.ns == x.ns)
			return i;
	return -1;
}

static int regrow(struct query_tree_index *ix)
{
	size_t nb = ix->nb ? ix->nb * 2 : 1 << 16, i;
	int32_t *b = malloc(nb * sizeof(*b));

	if (!b)
		return -ENOMEM;
	memset(b, 0xff, nb * sizeof(*b));
	for (i = 0; i < ix->n; i++) {
		size_t h = xhash(ix->v[i].id, nb);

		ix->v[i].next = b[h];
		b[h] = (int32_t)i;
	}
	free(ix->buckets);
	ix->buckets = b;
	ix->nb = nb;
	return 0;
}

struct query_tree_index *query_tree_index_new(void)
{
	return calloc(1, sizeof(struct query_tree_index));
}

void query_tree_index_free(struct query_tree_index *ix)
{
	if (!ix)
		return;
	free(ix->v);
	free(ix->buckets);
	free(ix);
}

void query_tree_index_line(struct query_tree_index *ix, const char *line, size_t len)
{
	struct inode_ *nd;
	struct xid id;

	/* exec records only: the tree's shape */
	if (!memmem(line, len < 64 ? len : 64, "\"type\":\"exec\"", 13) ||
	    !raw_xid(line, len, "\"exec_id\":\"", 11, &id) || ifind(ix, id) >= 0)
		return;
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 4096;
		struct inode_ *v = realloc(ix->v, cap * sizeof(*v));

		if (!v)
			return;
		ix->v = v;
		ix->cap = cap;
	}
	if (ix->n >= ix->nb / 2 && regrow(ix))
		return;
	nd = &ix->v[ix->n];
	memset(nd, 0, sizeof(*nd));
	nd->id = id;
	if (!raw_xid(line, len, "\"parent_exec_id\":\"", 18, &nd->parent))
		nd->parent = (struct xid){ 0, 0 };
	nd->session = raw_session(line, len);
	nd->next = ix->buckets[xhash(id, ix->nb)];
	ix->buckets[xhash(id, ix->nb)] = (int32_t)ix->n;
	ix->n++;
}

/* The execs root's tree holds: its ancestors, it (or a session's execs), every descendant. */
int query_tree_index_select(struct query_tree_index *ix, const char *root)
{
	struct xid r;
	size_t i, n = 0;
	bool changed = true, session = !strncmp(root, "s-", 2);
	uint32_t sid = session ? (uint32_t)strtoul(root + 2, NULL, 16) : 0;
	char buf[64];
	long k;

	snprintf(buf, sizeof(buf), "%s\"", root);
	if (!session && !parse_xid(buf, buf + strlen(buf), &r))
		return -ENOENT;
	for (i = 0; i < ix->n; i++)
		if (session ? ix->v[i].session == sid : (ix->v[i].id.pid == r.pid && ix->v[i].id.ns == r.ns))
			ix->v[i].want = true, n++;
	if (!n)
		return -ENOENT;
	/* descendants: until nothing changes (records come in time order: usually one pass) */
	while (changed) {
		changed = false;
		for (i = 0; i < ix->n; i++) {
			if (ix->v[i].want)
				continue;
			k = ifind(ix, ix->v[i].parent);
			if (k >= 0 && ix->v[k].want && (size_t)k != i)
				ix->v[i].want = changed = true;
		}
	}
	/* ancestors of what was chosen first, up to the first exec seen */
	for (i = 0; i < ix->n; i++) {
		if (!(session ? ix->v[i].session == sid : (ix->v[i].id.pid == r.pid && ix->v[i].id.ns == r.ns)))
			continue;
		for (k = ifind(ix, ix->v[i].parent); k >= 0 && !ix->v[k].want; k = ifind(ix, ix->v[k].parent))
			ix->v[k].want = true;
	}
	return 0;
}

/* Whether the second pass parses this line: an exec of the tree, its exit, a refusal in it. */
bool query_tree_index_wants(const struct query_tree_index *ix, const char *line, size_t len)
{
	struct xid id;
	long k;

	if (len < 32 || !memmem(line, 40, "\"type\":\"ex", 10))
		return false;
	if (raw_xid(line, len, "\"exec_id\":\"", 11, &id) && (k = ifind(ix, id)) >= 0)
		return ix->v[k].want;
	/* a failed exec has no id of its own: its caller's */
	if (raw_xid(line, len, "\"parent_exec_id\":\"", 18, &id) && (k = ifind(ix, id)) >= 0)
		return ix->v[k].want && memmem(line, 40, "\"type\":\"exec_failed\"", 20);
	return false;
}
