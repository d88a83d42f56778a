// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "events/collapse.h"
#include "util/sbuf.h"

struct chain {
	uint32_t tid;
	uint64_t first_ns;
	uint32_t argc;			/* the failures' argc */
	bool argc_exact;
	struct sbuf key;		/* the whole arguments read, NUL separated */
	size_t nkey;
	struct sbuf base;		/* the command name tried in each directory */
	struct sbuf lines;		/* the held records as formatted */
	size_t line_end[COLLAPSE_CHAIN_MAX];
	struct sbuf dirs;		/* the directories tried, NUL separated */
	size_t dir_end[COLLAPSE_CHAIN_MAX];
	unsigned int n;
};

struct eg_collapse {
	collapse_emit_fn emit;
	void *arg;
	struct chain *v[COLLAPSE_CHAINS_MAX];
	size_t n;
	size_t bytes;
	struct chain *folded;		/* the last chain folded: *ret points into it */
	struct eg_str dirs[COLLAPSE_CHAIN_MAX];
	struct eg_collapse_stats st;
};

struct eg_collapse *collapse_new(collapse_emit_fn emit, void *arg)
{
	struct eg_collapse *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->emit = emit;
	c->arg = arg;
	return c;
}

static size_t chain_bytes(const struct chain *ch)
{
	return ch->lines.len + ch->key.len + ch->dirs.len + ch->base.len;
}

static void chain_free(struct chain *ch)
{
	if (!ch)
		return;
	sbuf_free(&ch->key);
	sbuf_free(&ch->base);
	sbuf_free(&ch->lines);
	sbuf_free(&ch->dirs);
	free(ch);
}

/* Takes chain i out of the table (its memory is the caller's). */
static struct chain *take(struct eg_collapse *c, size_t i)
{
	struct chain *ch = c->v[i];

	c->v[i] = c->v[--c->n];
	c->bytes -= chain_bytes(ch);
	c->st.held -= ch->n;
	return ch;
}

static void write_out(struct eg_collapse *c, struct chain *ch)
{
	size_t start = 0;
	unsigned int i;

	for (i = 0; i < ch->n; i++) {
		c->emit(c->arg, ch->lines.data + start, ch->line_end[i] - start);
		start = ch->line_end[i];
	}
	c->st.written_late += ch->n;
	chain_free(ch);
}

static ssize_t find(const struct eg_collapse *c, uint32_t tid)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i]->tid == tid)
			return i;
	return -1;
}

static void flush_tid(struct eg_collapse *c, uint32_t tid)
{
	ssize_t i = find(c, tid);

	if (i >= 0)
		write_out(c, take(c, i));
}

static void flush_oldest(struct eg_collapse *c)
{
	size_t i, old = 0;

	for (i = 1; i < c->n; i++)
		if (c->v[i]->first_ns < c->v[old]->first_ns)
			old = i;
	if (c->n)
		write_out(c, take(c, old));
}

static struct eg_str last_component(const struct eg_str *p)
{
	const char *s = p->len ? memrchr(p->p, '/', p->len) : NULL;
	struct eg_str r = { p->p, p->len };

	if (s) {
		r.p = s + 1;
		r.len = p->len - (s + 1 - p->p);
	}
	return r;
}

static bool same_key(const struct chain *ch, const struct eg_record *r)
{
	const char *k = ch->key.data;
	size_t i;

	if (ch->nkey != r->argv_kept || (bool)(r->h.flags & EG_F_ARGC_INEXACT) != !ch->argc_exact ||
	    r->h.argc != ch->argc)
		return false;
	for (i = 0; i < r->argv_kept; i++) {
		size_t n = strlen(k);

		if (n != r->argv[i].len || memcmp(k, r->argv[i].p, n))
			return false;
		k += n + 1;
	}
	return true;
}

bool collapse_failed(struct eg_collapse *c, const struct eg_record *r, const char *line, size_t len,
		     bool must_show)
{
	struct eg_str base = last_component(&r->filename);
	struct chain *ch;
	ssize_t at = find(c, r->h.tid);
	size_t i, dlen;

	/* only a PATH search's misses, with a whole path to fold, and nothing a filter may not hide */
	if (must_show || r->h.err != -ENOENT || !base.len || base.len == r->filename.len ||
	    (r->h.flags & (EG_F_FILENAME_FAULT | EG_F_FILENAME_TRUNC)) || memchr(r->filename.p, 0, r->filename.len)) {
		flush_tid(c, r->h.tid);
		return false;
	}
	if (at >= 0) {
		ch = c->v[at];
		if (ch->n == COLLAPSE_CHAIN_MAX || !same_key(ch, r) || ch->base.len != base.len ||
		    memcmp(ch->base.data, base.p, base.len) ||
		    r->h.ktime_ns - ch->first_ns > COLLAPSE_HOLD_NS) {
			write_out(c, take(c, at));
			at = -1;
		} else {
			take(c, at);	/* back in below, with its new size */
		}
	}
	if (at < 0) {
		if (c->n == COLLAPSE_CHAINS_MAX)
			flush_oldest(c);
		ch = calloc(1, sizeof(*ch));
		if (!ch)
			return false;
		ch->tid = r->h.tid;
		ch->first_ns = r->h.ktime_ns;
		ch->argc = r->h.argc;
		ch->argc_exact = !(r->h.flags & EG_F_ARGC_INEXACT);
		for (i = 0; i < r->argv_kept; i++) {
			sbuf_put(&ch->key, r->argv[i].p, r->argv[i].len);
			sbuf_putc(&ch->key, '\0');
		}
		ch->nkey = r->argv_kept;
		sbuf_put(&ch->base, base.p, base.len);
	}
	sbuf_put(&ch->lines, line, len);
	ch->line_end[ch->n] = ch->lines.len;
	/* the directory tried: the path up to its last '/' ("/" for "/name") */
	dlen = r->filename.len - base.len - 1;
	if (dlen)
		sbuf_put(&ch->dirs, r->filename.p, dlen);
	else
		sbuf_putc(&ch->dirs, '/');
	sbuf_putc(&ch->dirs, '\0');
	ch->dir_end[ch->n] = ch->dirs.len;
	ch->n++;
	if (ch->lines.oom || ch->key.oom || ch->dirs.oom || ch->base.oom) {
		/* cannot hold it: what was held goes out, and this one with it */
		ch->n--;
		write_out(c, ch);
		return false;
	}
	c->v[c->n++] = ch;
	c->bytes += chain_bytes(ch);
	c->st.held += ch->n;
	while (c->bytes > COLLAPSE_BYTES_MAX && c->n)
		flush_oldest(c);
	return true;
}

/*
 * Whether exec r ends chain ch: same command name, same arguments (a
 * script's committed argv has the interpreter in front and the script's
 * path in place of argv[0]), soon enough.
 */
static bool ends(const struct chain *ch, const struct eg_record *r)
{
	struct eg_str base = last_component(&r->requested);
	bool script = r->h.flags & EG_F_SCRIPT;
	uint32_t off = 0;
	const char *k = ch->key.data;
	size_t i;

	if (r->h.ktime_ns - ch->first_ns > COLLAPSE_HOLD_NS || base.len != ch->base.len ||
	    memcmp(base.p, ch->base.data, base.len))
		return false;
	if (script) {
		if (!ch->argc_exact || r->h.argc < ch->argc + 1 || r->h.argc > ch->argc + 2)
			return false;
		off = r->h.argc - ch->argc;
	} else if (ch->argc_exact && r->h.argc != ch->argc) {
		return false;
	}
	for (i = 0; i < ch->nkey; i++) {
		size_t n = strlen(k), e = i + off;

		/* a script's argv[0] is replaced by its path: compare from argv[1] */
		if (!(script && i == 0) && e < r->argv_kept &&
		    (n != r->argv[e].len || memcmp(k, r->argv[e].p, n)))
			return false;
		k += n + 1;
	}
	return true;
}

bool collapse_exec(struct eg_collapse *c, const struct eg_record *r, struct eg_path_search *ret)
{
	ssize_t at = find(c, r->h.tid);
	struct chain *ch;
	size_t start = 0;
	unsigned int i;

	chain_free(c->folded);
	c->folded = NULL;
	if (at < 0)
		return false;
	if (!ends(c->v[at], r)) {
		write_out(c, take(c, at));
		return false;
	}
	ch = take(c, at);
	for (i = 0; i < ch->n; i++) {
		c->dirs[i].p = ch->dirs.data + start;
		c->dirs[i].len = ch->dir_end[i] - start - 1;
		start = ch->dir_end[i];
	}
	ret->failed = ch->n;
	ret->dirs = c->dirs;
	ret->ndirs = ch->n;
	c->st.folded += ch->n;
	c->folded = ch;
	return true;
}

unsigned int collapse_discard(struct eg_collapse *c, const struct eg_record *r)
{
	ssize_t at = find(c, r->h.tid);
	unsigned int n;

	if (at < 0)
		return 0;
	if (!ends(c->v[at], r)) {
		write_out(c, take(c, at));
		return 0;
	}
	n = c->v[at]->n;
	chain_free(take(c, at));
	c->st.discarded += n;
	return n;
}

void collapse_expire(struct eg_collapse *c, uint64_t now_ns)
{
	size_t i = 0;

	while (i < c->n) {
		if (now_ns > c->v[i]->first_ns && now_ns - c->v[i]->first_ns > COLLAPSE_HOLD_NS)
			write_out(c, take(c, i));	/* the last one moved to i */
		else
			i++;
	}
}

void collapse_flush(struct eg_collapse *c)
{
	if (!c)
		return;
	while (c->n)
		flush_oldest(c);
}

void collapse_stats(const struct eg_collapse *c, struct eg_collapse_stats *ret)
{
	*ret = c->st;
}

void collapse_free(struct eg_collapse *c)
{
	if (!c)
		return;
	collapse_flush(c);
	chain_free(c->folded);
	free(c);
}
