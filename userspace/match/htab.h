/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A hash table from strings (or byte keys) to ascending lists of indices,
 * for the policy's indexes: open addressing, keys borrowed (they must
 * outlive the table), indices added in ascending order.
 */
#ifndef EG_HTAB_H
#define EG_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct eg_bucket {
	const char *key;		/* borrowed; keylen bytes, not NUL-terminated */
	uint32_t keylen;
	uint32_t hash;
	uint32_t *idx;
	uint32_t n, cap;
};

struct eg_htab {
	struct eg_bucket *b;
	uint32_t mask;			/* capacity - 1, capacity a power of 2 */
	uint32_t used;
};

uint32_t eg_hash(const char *s, size_t n);
struct eg_bucket *eg_htab_find(const struct eg_htab *t, const char *key, size_t n, uint32_t h);
int eg_htab_add(struct eg_htab *t, const char *key, uint32_t idx);
/* The same for a binary key of n bytes (borrowed: it must outlive the table). */
int eg_htab_add_key(struct eg_htab *t, const char *key, size_t n, uint32_t idx);
void eg_htab_free(struct eg_htab *t);

#endif
