// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* String (or bytes) -> ascending list of indices: open addressing, FNV-1a. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "match/htab.h"

uint32_t eg_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;	/* FNV-1a: incremental, so prefixes hash as we scan */
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

struct eg_bucket *eg_htab_find(const struct eg_htab *t, const char *key, size_t n, uint32_t h)
{
	uint32_t i;

	if (!t->b)
		return NULL;
	for (i = h & t->mask;; i = (i + 1) & t->mask) {
		struct eg_bucket *b = &t->b[i];

		if (!b->key)
			return NULL;
		if (b->hash == h && b->keylen == n && !memcmp(b->key, key, n))
			return b;
	}
}

static int htab_grow(struct eg_htab *t)
{
	uint32_t cap = t->b ? (t->mask + 1) * 2 : 64, i;
	struct eg_bucket *nb;

	if (cap == 0)
		return -ENOMEM;
	nb = calloc(cap, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	for (i = 0; t->b && i <= t->mask; i++) {
		uint32_t j;

		if (!t->b[i].key)
			continue;
		for (j = t->b[i].hash & (cap - 1); nb[j].key; j = (j + 1) & (cap - 1))
			;
		nb[j] = t->b[i];
	}
	free(t->b);
	t->b = nb;
	t->mask = cap - 1;
	return 0;
}

static int htab_add_n(struct eg_htab *t, const char *key, size_t n, uint32_t idx)
{
	uint32_t h = eg_hash(key, n), i;
	struct eg_bucket *b = eg_htab_find(t, key, n, h);

	if (!b) {
		/* At most half full: probes stay short. */
		if ((!t->b || (t->used + 1) * 2 > t->mask + 1) && htab_grow(t))
			return -ENOMEM;
		for (i = h & t->mask; t->b[i].key; i = (i + 1) & t->mask)
			;
		b = &t->b[i];
		b->key = key;
		b->keylen = (uint32_t)n;
		b->hash = h;
		t->used++;
	}
	/* Rules arrive in order: a repeat can only be the last one. */
	if (b->n && b->idx[b->n - 1] == idx)
		return 0;
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? b->cap * 2 : 2;
		uint32_t *v = realloc(b->idx, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->idx = v;
		b->cap = cap;
	}
	b->idx[b->n++] = idx;
	return 0;
}

int eg_htab_add(struct eg_htab *t, const char *key, uint32_t idx)
{
	return htab_add_n(t, key, strlen(key), idx);
}

int eg_htab_add_key(struct eg_htab *t, const char *key, size_t n, uint32_t idx)
{
	return htab_add_n(t, key, n, idx);
}

void eg_htab_free(struct eg_htab *t)
{
	uint32_t i;

	for (i = 0; t->b && i <= t->mask; i++)
		free(t->b[i].idx);
	free(t->b);
	memset(t, 0, sizeof(*t));
}
