// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <fnmatch.h>
#include <string.h>
#include "events/filter.h"
#include "events/format.h"

bool filter_active(const struct eg_filter *f)
{
	return f->n_uids || f->n_comm || f->n_path;
}

static const char *cstr(struct eg_filter *f, const char *p, size_t n)
{
	sbuf_reset(&f->tmp);
	sbuf_put(&f->tmp, p, n);
	return sbuf_cstr(&f->tmp);
}

static bool any_glob(const char *const *globs, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!fnmatch(globs[i], s, 0))
			return true;
	return false;
}

enum eg_filter_cause filter_match(struct eg_filter *f, const struct eg_record *r)
{
	enum eg_filter_cause c = EG_FILTER_NONE;
	size_t i;

	if (f->n_uids) {
		for (i = 0; i < f->n_uids && f->uids[i] != r->h.uid; i++)
			;
		if (i == f->n_uids)
			c = EG_FILTER_UID;
	}
	if (c == EG_FILTER_NONE && f->n_comm &&
	    any_glob(f->comm, f->n_comm, cstr(f, r->h.comm, strnlen(r->h.comm, sizeof(r->h.comm)))))
		c = EG_FILTER_COMM;
	if (c == EG_FILTER_NONE && f->n_path) {
		struct eg_str p = record_program(r);

		if (any_glob(f->path, f->n_path, cstr(f, p.p, p.len)))
			c = EG_FILTER_PATH;
	}
	return c;
}

const char *filter_cause_name(enum eg_filter_cause c)
{
	switch (c) {
	case EG_FILTER_UID: return "uid";
	case EG_FILTER_COMM: return "comm";
	case EG_FILTER_PATH: return "path";
	default: return "none";
	}
}

uint64_t filter_total(const struct eg_filter *f)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < EG_FILTER__COUNT; i++)
		t += f->n[i];
	return t;
}

void filter_free(struct eg_filter *f)
{
	sbuf_free(&f->tmp);
}
