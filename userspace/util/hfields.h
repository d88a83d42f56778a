/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The handover's encoding (SIGUSR2: the daemon re-executes itself and the
 * next one reads back what this one wrote): a struct's plain fields as a
 * table of (key, kind, place), written into a JSON object and read back
 * from one by the same table, so a field is named once for both ways.
 * What is not plain (lists, heap strings, other objects) stays by hand
 * beside the table.
 */
#ifndef EG_UTIL_HFIELDS_H
#define EG_UTIL_HFIELDS_H

#include <stddef.h>
#include <jansson.h>
#include "util/jsonw.h"

enum eg_hf_kind {
	EG_HF_BOOL,		/* bool */
	EG_HF_INT,		/* a signed integer of any size */
	EG_HF_UINT,		/* an unsigned integer of any size */
	EG_HF_HEX,		/* an unsigned integer as a hex string (JSON readers' integers are signed) */
	EG_HF_STR,		/* char[]: a UTF-8 string (truncated to the array when read) */
	EG_HF_STR_NULL,		/* char[]: null when empty */
	EG_HF_B64,		/* char[]: any bytes but NUL, as base64 */
	EG_HF_FD,		/* int: an fd that goes along (collected; -1 when not there) */
};

struct eg_hfield {
	const char *key;
	enum eg_hf_kind kind;
	size_t off, size;
};

#define EG_HF(type, member, kind, key) \
	{ key, kind, offsetof(type, member), sizeof(((type *)0)->member) }

/* Where a write collects the fds of EG_HF_FD fields: at most max; one that does not fit is written as null. */
struct eg_hf_fds {
	int *fds;
	int *n;
	int max;
};

/* obj's fields in t, into the object w has open. */
void eg_hf_write(struct jsonw *w, const void *obj, const struct eg_hfield *t, size_t n, struct eg_hf_fds *fds);
/* The same fields from o into obj; a missing one is 0, "", or -1 for an fd. -EINVAL: bad base64. */
int eg_hf_read(const json_t *o, void *obj, const struct eg_hfield *t, size_t n);

#endif
