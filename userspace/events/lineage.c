// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A ring of entries in insertion order (the oldest is overwritten first)
 * indexed by a chained hash table of exec ids. Every operation is O(1)
 * but the unlinking of an evicted entry from its (short) chain.
 */
#include <stdlib.h>
#include <string.h>
#include "events/lineage.h"

struct eg_lineage {
	struct eg_lineage_entry *e;
	size_t cap, head, n;		/* e[head] is the next slot written; n in use */
	int32_t *buckets;
	uint32_t nbuckets;		/* a power of two */
	size_t bytes, max_bytes;
};

static uint32_t hash(uint32_t pid, uint64_t ktime, uint32_t nb)
{
	uint64_t h = (ktime ^ ((uint64_t)pid << 32) ^ pid) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32) & (nb - 1);
}

struct eg_lineage *lineage_new(size_t max_entries, size_t max_bytes)
{
	struct eg_lineage *l = calloc(1, sizeof(*l));
	uint32_t nb = 1;

	if (!l)
		return NULL;
	while (nb < max_entries * 2)
		nb <<= 1;
	l->e = calloc(max_entries, sizeof(*l->e));
	l->buckets = malloc(nb * sizeof(*l->buckets));
	if (!l->e || !l->buckets) {
		lineage_free(l);
		return NULL;
	}
	memset(l->buckets, 0xff, nb * sizeof(*l->buckets));
	l->cap = max_entries;
	l->nbuckets = nb;
	l->max_bytes = max_bytes;
	return l;
}

void lineage_free(struct eg_lineage *l)
{
	size_t i;

	if (!l)
		return;
	if (l->e)
		for (i = 0; i < l->cap; i++)
			if (l->e[i].filename != l->e[i].inl)
				free(l->e[i].filename);
	free(l->e);
	free(l->buckets);
	free(l);
}

/* The oldest entry goes: out of its chain, its name freed. */
static void evict_oldest(struct eg_lineage *l)
{
	/* no division: a step of the daemon's per-record path */
	size_t idx = l->head >= l->n ? l->head - l->n : l->head + l->cap - l->n;
	struct eg_lineage_entry *x = &l->e[idx];
	int32_t *p = &l->buckets[x->bucket];

	while (*p >= 0 && (size_t)*p != idx)
		p = &l->e[*p].next;
	if (*p >= 0)
		*p = x->next;
	l->bytes -= x->filename_len;
	if (x->filename != x->inl)
		free(x->filename);
	x->filename = NULL;
	x->filename_len = 0;
	l->n--;
}

void lineage_add(struct eg_lineage *l, uint32_t pid, uint64_t ktime, const char *filename, size_t len,
		 const char comm[16], uint8_t severity)
{
	struct eg_lineage_entry *x;
	char *name;
	size_t idx;

	if (!l || len > l->max_bytes)
		return;
	if (l->n == l->cap)
		evict_oldest(l);
	while (l->n && l->bytes + len > l->max_bytes)
		evict_oldest(l);
	idx = l->head;
	x = &l->e[idx];
	/* most names fit in the entry: no allocation per exec */
	name = len < sizeof(x->inl) ? x->inl : malloc(len + 1);
	if (!name)
		return;
	memcpy(name, filename, len);
	name[len] = '\0';
	x->pid = pid;
	x->ktime = ktime;
	x->filename = name;
	x->filename_len = len;
	x->severity = severity;
	memcpy(x->comm, comm, sizeof(x->comm));
	x->bucket = hash(pid, ktime, l->nbuckets);
	x->next = l->buckets[x->bucket];
	l->buckets[x->bucket] = (int32_t)idx;
	l->bytes += len;
	l->head = l->head + 1 == l->cap ? 0 : l->head + 1;
	l->n++;
}

const struct eg_lineage_entry *lineage_get(const struct eg_lineage *l, uint32_t pid, uint64_t ktime)
{
	int32_t i;

	if (!l)
		return NULL;
	for (i = l->buckets[hash(pid, ktime, l->nbuckets)]; i >= 0; i = l->e[i].next)
		if (l->e[i].pid == pid && l->e[i].ktime == ktime)
			return &l->e[i];
	return NULL;
}

size_t lineage_count(const struct eg_lineage *l)
{
	return l ? l->n : 0;
}
