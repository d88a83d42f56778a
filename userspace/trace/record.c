// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "trace/record.h"

/* The BPF side stores components leaf first, each NUL terminated: "c\0b\0a\0" is /a/b/c. */
static void rebuild_cwd(struct sbuf *out, const char *p, size_t n)
{
	size_t end = n;

	sbuf_reset(out);
	while (end > 0) {
		size_t start;

		/* end points past a component's NUL; find the component's start */
		start = end - 1;
		while (start > 0 && p[start - 1] != '\0')
			start--;
		sbuf_putc(out, '/');
		sbuf_put(out, p + start, end - 1 - start);
		end = start;
	}
	if (!out->len)
		sbuf_putc(out, '/');
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
	const char *base = data, *fn, *cwd, *argv;
	struct eg_event h;
	size_t i, start, n, count = 0;

	if (size < sizeof(h))
		return -EINVAL;
	memcpy(&h, data, sizeof(h));
	if (h.type != EG_EVENT_EXEC && h.type != EG_EVENT_EXEC_FAILED)
		return -EINVAL;
	if (h.filename_len > EG_FILENAME_MAX || h.cwd_len > EG_CWD_MAX ||
	    h.argv_len > EG_ARGV_LIMIT ||
	    sizeof(h) + (size_t)h.filename_len + h.cwd_len + h.argv_len > size)
		return -EINVAL;
	fn = base + sizeof(h);
	cwd = fn + h.filename_len;
	argv = cwd + h.cwd_len;

	memset(ret, 0, sizeof(*ret));
	ret->h = h;
	/* filename_len counts the NUL when the string was read whole */
	n = h.filename_len;
	while (n && fn[n - 1] == '\0')
		n--;
	ret->filename = (struct eg_str){ fn, n };
	ret->filename_truncated = h.flags & EG_F_FILENAME_TRUNC;

	/* a cut cwd may end inside a component: keep only whole ones */
	n = h.cwd_len;
	while (n && cwd[n - 1] != '\0')
		n--;
	rebuild_cwd(&d->cwd, cwd, n);
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
	free(d->argv);
	memset(d, 0, sizeof(*d));
}
