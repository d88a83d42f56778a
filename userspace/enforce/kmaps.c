// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Loading compiled rules: two sets, one in force. A reload fills the other
 * set, then one store to "kstate" switches; a judgement that saw the
 * sequence number change under it starts over (bpf/kjudge.bpf.h), so the
 * kernel never decides with half of one policy and half of another. The
 * old set is emptied afterwards, ready for the next reload.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "enforce/kmaps.h"

const char *const kmaps_names[] = { EG_KMAPS_NAMES, NULL };

/* The fd of kmaps_names[i]: the same order as EG_KMAPS_NAMES. */
static int *field(struct kmaps *m, int i)
{
	int *f[] = { &m->krules, &m->kindex, &m->kmember, &m->kglobs, &m->kconf, &m->kstate, &m->kctx };

	_Static_assert(sizeof(f) / sizeof(f[0]) == sizeof((const char *[]){ EG_KMAPS_NAMES }) / sizeof(char *),
		       "one fd per name");

	return f[i];
}

int kmaps_open_pinned(const char *dir, struct kmaps *ret)
{
	char path[4096 + 64];
	int i, err;

	for (i = 0; kmaps_names[i]; i++)
		*field(ret, i) = -1;
	for (i = 0; kmaps_names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, kmaps_names[i]);
		*field(ret, i) = bpf_obj_get(path);
		if (*field(ret, i) < 0) {
			err = -errno;
			kmaps_close(ret);
			return err;
		}
	}
	return 0;
}

void kmaps_close(struct kmaps *m)
{
	int i;

	for (i = 0; kmaps_names[i]; i++) {
		if (*field(m, i) >= 0)
			close(*field(m, i));
		*field(m, i) = -1;
	}
}

int kmaps_status(const struct kmaps *m, struct kmaps_status *ret)
{
	struct eg_kstate st = {};
	__u32 zero = 0;

	memset(ret, 0, sizeof(*ret));
	if (bpf_map_lookup_elem(m->kstate, &zero, &st))
		return -errno;
	ret->loaded = st.seq != 0;
	ret->seq = st.seq;
	ret->set = EG_KSET_OF(st.seq);
	if (ret->loaded && bpf_map_lookup_elem(m->kconf, &ret->set, &ret->conf))
		return -errno;
	return 0;
}

/* Deletes every key of a hash map whose first __u32 (the set) is `set`. */
static int clear_set(int fd, size_t key_size, __u32 set)
{
	char *keys = NULL, *prev, *cur;
	size_t n = 0, cap = 0, i;
	bool have_prev = false;
	int err = 0;

	prev = malloc(key_size);
	cur = malloc(key_size);
	if (!prev || !cur) {
		err = -ENOMEM;
		goto out;
	}
	/* collect first: deleting while walking would restart the walk */
	while (!bpf_map_get_next_key(fd, have_prev ? prev : NULL, cur)) {
		__u32 s;

		memcpy(&s, cur, sizeof(s));
		if (s == set) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 1024;
				char *v = realloc(keys, ncap * key_size);

				if (!v) {
					err = -ENOMEM;
					goto out;
				}
				keys = v;
				cap = ncap;
			}
			memcpy(keys + n++ * key_size, cur, key_size);
		}
		memcpy(prev, cur, key_size);
		have_prev = true;
	}
	for (i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, keys + i * key_size) && errno != ENOENT && !err)
			err = -errno;
out:
	free(keys);
	free(prev);
	free(cur);
	return err;
}

static int clear_sets(const struct kmaps *m, __u32 set)
{
	int err;

	err = clear_set(m->kindex, sizeof(struct eg_kkey), set);
	if (!err)
		err = clear_set(m->kmember, sizeof(struct eg_kkey), set);
	if (!err)
		err = clear_set(m->kglobs, sizeof(struct eg_kglob_key), set);
	return err;
}

int kmaps_load(const struct kmaps *m, const struct kc_prog *k, bool enforce, uint32_t *ret_seq)
{
	struct eg_kstate st = {}, nst;
	struct eg_kconf conf;
	__u32 zero = 0, set, i;
	int err;

	if (bpf_map_lookup_elem(m->kstate, &zero, &st))
		return -errno;
	set = st.seq ? EG_KSET_OF(st.seq) ^ 1 : 0;
	/* leftovers of a daemon that died halfway through a reload */
	err = clear_sets(m, set);
	if (err)
		return err;
	for (i = 0; i < k->n_rules; i++) {
		__u32 idx = set * EG_KRULES_MAX + i;

		if (bpf_map_update_elem(m->krules, &idx, &k->rules[i], BPF_ANY))
			return -errno;
	}
	for (i = 0; i < k->n_globs; i++) {
		struct eg_kglob_key gk = { set, k->globs[i].id };

		if (bpf_map_update_elem(m->kglobs, &gk, &k->globs[i].g, BPF_ANY))
			return -errno;
	}
	for (i = 0; i < k->n_index; i++) {
		struct eg_kkey key = k->index[i].key;

		key.set = set;
		if (bpf_map_update_elem(m->kindex, &key, &k->index[i].val, BPF_ANY))
			return -errno;
	}
	for (i = 0; i < k->n_member; i++) {
		struct eg_kkey key = k->member[i].key;

		key.set = set;
		if (bpf_map_update_elem(m->kmember, &key, &k->member[i].val, BPF_ANY))
			return -errno;
	}
	/* every context id of the set: the unused ones with no limits */
	for (i = 0; i < EG_CONTEXTS_MAX; i++) {
		__u32 key = set * EG_CONTEXTS_MAX + i;
		struct eg_kctx c = { .max_depth = -1, .max_shells = -1 };

		if (i && i <= k->n_ctx)
			c = k->ctx[i];
		if (bpf_map_update_elem(m->kctx, &key, &c, BPF_ANY))
			return -errno;
	}
	conf = k->conf;
	if (enforce)
		conf.flags |= EG_KC_ENFORCE;
	nst.seq = st.seq + 1 ? st.seq + 1 : 2;	/* EG_KSET_OF(seq) == set, wrapped or not */
	nst.active = EG_KSET_OF(nst.seq);
	conf.seq = nst.seq;
	if (bpf_map_update_elem(m->kconf, &set, &conf, BPF_ANY))
		return -errno;
	/* the switch: from here every judgement uses the new set */
	if (bpf_map_update_elem(m->kstate, &zero, &nst, BPF_ANY))
		return -errno;
	if (st.seq)
		clear_sets(m, set ^ 1);
	*ret_seq = nst.seq;
	return 0;
}

int kmaps_continue(const struct kmaps *m, uint32_t seq)
{
	struct eg_kstate st = { .active = EG_KSET_OF(seq), .seq = seq };
	__u32 zero = 0;

	if (!seq)
		return 0;
	return bpf_map_update_elem(m->kstate, &zero, &st, BPF_ANY) ? -errno : 0;
}

int kmaps_unload(const struct kmaps *m)
{
	struct eg_kstate off = {};
	__u32 zero = 0;
	int err;

	if (bpf_map_update_elem(m->kstate, &zero, &off, BPF_ANY))
		return -errno;
	err = clear_sets(m, 0);
	if (!err)
		err = clear_sets(m, 1);
	return err;
}
