// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "trace/record.h"

/*
 * The BPF side stores paths leaf first, each component NUL terminated:
 * "c\0b\0a\0" is /a/b/c. A cut path may end inside a component: only
 * whole ones are kept. deleted appends " (deleted)", as d_path() does.
 */
static void rebuild_path(struct sbuf *out, const char *p, size_t n, bool deleted)
{
	size_t end;

	while (n && p[n - 1] != '\0')
		n--;
	end = n;
	sbuf_reset(out);
	while (end > 0) {
		size_t start;

		/* end points past a component's NUL; find the component's start */
		start = end - 1;
		while (start > 0 && p[start - 1] != '\0')
			start--;
		/* the kernel has no empty names; a stray NUL adds no "//" */
		if (end - 1 > start) {
			sbuf_putc(out, '/');
			sbuf_put(out, p + start, end - 1 - start);
		}
		end = start;
	}
	if (!out->len)
		sbuf_putc(out, '/');
	if (deleted)
		sbuf_puts(out, " (deleted)");
}

/* A NUL-terminated string of n bytes (n counts the NUL when it was read whole). */
static struct eg_str plain(const char *p, size_t n)
{
	while (n && p[n - 1] == '\0')
		n--;
	return (struct eg_str){ p, n };
}

static int grow_argv(struct eg_decoder *d, size_t need)
{
	struct eg_str *v;
	size_t cap = d->argv_cap ? d->argv_cap : 16;

	if (need <= d->argv_cap)
		return 0;
	while (cap < need)
		cap *= 2;
	v = realloc(d->argv, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	d->argv = v;
	d->argv_cap = cap;
	return 0;
}

int record_decode(struct eg_decoder *d, const void *data, size_t size, struct eg_record *ret)
{
	const char *base = data, *fn, *rq, *in, *sc, *ch, *cwd, *argv;
	struct eg_event h;
	size_t i, start, count = 0;

	if (size < sizeof(h))
		return -EINVAL;
	memcpy(&h, data, sizeof(h));
	if (h.type != EG_EVENT_EXEC && h.type != EG_EVENT_EXEC_FAILED && h.type != EG_EVENT_LOADED &&
	    h.type != EG_EVENT_SCOPE && h.type != EG_EVENT_CGROUP)
		return -EINVAL;
	if (h.filename_len > EG_FILENAME_MAX || h.requested_len > EG_FILENAME_MAX ||
	    h.interp_len > EG_FILENAME_MAX || h.script_len > EG_FILENAME_MAX ||
	    h.chain_len > EG_CHAIN_BYTES || h.cwd_len > EG_CWD_MAX || h.argv_len > EG_ARGV_LIMIT ||
	    sizeof(h) + (size_t)h.filename_len + h.requested_len + h.interp_len + h.script_len +
	    h.chain_len + h.cwd_len + h.argv_len > size)
		return -EINVAL;
	fn = base + sizeof(h);
	rq = fn + h.filename_len;
	in = rq + h.requested_len;
	sc = in + h.interp_len;
	ch = sc + h.script_len;
	cwd = ch + h.chain_len;
	argv = cwd + h.cwd_len;

	memset(ret, 0, sizeof(*ret));
	ret->h = h;
	if (h.type != EG_EVENT_EXEC_FAILED && !(h.flags & EG_F_ANON_FILE)) {
		rebuild_path(&d->filename, fn, h.filename_len, h.flags & EG_F_FILE_DELETED);
		if (d->filename.oom)
			return -ENOMEM;
		ret->filename = (struct eg_str){ d->filename.data, d->filename.len };
	} else {
		ret->filename = plain(fn, h.filename_len);
	}
	ret->filename_truncated = h.flags & EG_F_FILENAME_TRUNC;
	ret->script_truncated = h.flags & EG_F_SCRIPT_TRUNC;
	ret->requested_truncated = h.flags & EG_F_REQUESTED_TRUNC;
	ret->requested = plain(rq, h.requested_len);
	ret->interp = plain(in, h.interp_len);
	if (h.flags & EG_F_SCRIPT_FOUND) {
		rebuild_path(&d->script, sc, h.script_len, h.flags & EG_F_SCRIPT_DELETED);
		if (d->script.oom)
			return -ENOMEM;
		ret->script = (struct eg_str){ d->script.data, d->script.len };
	}

	/* eg_chain_ent and its path, for each middle script */
	for (i = 0; i + sizeof(struct eg_chain_ent) <= h.chain_len && ret->chain_n < EG_CHAIN_MAX;) {
		struct eg_chain_ent ent;
		struct eg_chain_view *v = &ret->chain[ret->chain_n];

		memcpy(&ent, ch + i, sizeof(ent));
		i += sizeof(ent);
		if (ent.len > h.chain_len - i)
			return -EINVAL;
		v->dev = ent.dev;
		v->ino = ent.ino;
		v->flags = ent.flags;
		if (ent.flags & EG_CE_TRUNC)
			ret->chain_truncated = true;
		if (ent.flags & EG_CE_ANON) {
			v->path = plain(ch + i, ent.len);
		} else {
			rebuild_path(&d->chain[ret->chain_n], ch + i, ent.len, ent.flags & EG_CE_DELETED);
			if (d->chain[ret->chain_n].oom)
				return -ENOMEM;
			v->path = (struct eg_str){ d->chain[ret->chain_n].data, d->chain[ret->chain_n].len };
		}
		i += ent.len;
		ret->chain_n++;
	}
	rebuild_path(&d->cwd, cwd, h.cwd_len, h.flags & EG_F_CWD_DELETED);
	if (d->cwd.oom)
		return -ENOMEM;
	ret->cwd = (struct eg_str){ d->cwd.data, d->cwd.len };
	ret->cwd_truncated = h.flags & EG_F_CWD_TRUNC;

	/* whole arguments end in a NUL; bytes after the last NUL are a cut one */
	for (i = 0; i < h.argv_len; i++)
		count += argv[i] == '\0';
	if (grow_argv(d, count + 1))
		return -ENOMEM;
	for (i = 0, start = 0; i < h.argv_len; i++) {
		if (argv[i] != '\0')
			continue;
		d->argv[ret->argv_kept++] = (struct eg_str){ argv + start, i - start };
		start = i + 1;
	}
	ret->argv = d->argv;
	ret->argv_truncated = (h.flags & EG_F_ARGV_TRUNC) || start < h.argv_len ||
			      ret->argv_kept < h.argc;
	return 0;
}

void decoder_free(struct eg_decoder *d)
{
	if (!d)
		return;
	sbuf_free(&d->cwd);
	sbuf_free(&d->filename);
	sbuf_free(&d->script);
	for (size_t k = 0; k < EG_CHAIN_MAX; k++)
		sbuf_free(&d->chain[k]);
	free(d->argv);
	memset(d, 0, sizeof(*d));
}
