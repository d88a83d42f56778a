// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "daemon/hold.h"

struct held {
	uint32_t pid;
	uint64_t ktime;
	uint64_t at_ms;
	void *data;
	size_t size;
};

/* A ring in arrival order: the oldest is at head. */
struct eg_hold {
	struct held v[HOLD_MAX];
	size_t head, n;
};

int hold_new(struct eg_hold **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void hold_free(struct eg_hold *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < h->n; i++)
		free(h->v[(h->head + i) % HOLD_MAX].data);
	free(h);
}

int hold_put(struct eg_hold *h, uint32_t pid, uint64_t ktime, const void *data, size_t size,
	     uint64_t now_ms)
{
	struct held *e;

	if (h->n == HOLD_MAX)
		return -ENOSPC;
	e = &h->v[(h->head + h->n) % HOLD_MAX];
	e->data = malloc(size);
	if (!e->data)
		return -ENOMEM;
	memcpy(e->data, data, size);
	e->size = size;
	e->pid = pid;
	e->ktime = ktime;
	e->at_ms = now_ms;
	h->n++;
	return 0;
}

/* Takes entry i (counted from head) out, closing the gap. */
static void *take(struct eg_hold *h, size_t i, size_t *ret_size)
{
	struct held e = h->v[(h->head + i) % HOLD_MAX];

	for (; i + 1 < h->n; i++)
		h->v[(h->head + i) % HOLD_MAX] = h->v[(h->head + i + 1) % HOLD_MAX];
	h->n--;
	*ret_size = e.size;
	return e.data;
}

void *hold_take(struct eg_hold *h, uint32_t pid, uint64_t ktime, size_t *ret_size)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		const struct held *e = &h->v[(h->head + i) % HOLD_MAX];

		if (e->pid == pid && e->ktime == ktime)
			return take(h, i, ret_size);
	}
	return NULL;
}

void *hold_expired(struct eg_hold *h, uint64_t now_ms, bool force, size_t *ret_size)
{
	struct held *e;
	void *data;

	if (!h->n)
		return NULL;
	e = &h->v[h->head];
	if (!force && now_ms - e->at_ms < HOLD_MS)
		return NULL;
	data = e->data;
	*ret_size = e->size;
	h->head = (h->head + 1) % HOLD_MAX;
	h->n--;
	return data;
}

size_t hold_count(const struct eg_hold *h)
{
	return h ? h->n : 0;
}
