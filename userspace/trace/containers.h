/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What a container is, from its runtime's own state: the id and runtime
 * from the cgroup path (trace/cgroups.c), then the name, image and pod
 * from the files the runtime keeps (runc's and crun's state, the OCI
 * bundle's config.json annotations, containers/storage for podman and
 * CRI-O, containerd's task directories, docker's config.v2.json).
 *
 * Read once per container and cached by cgroup id: the first record of a
 * container pays for a few small file reads, every later one a hash
 * lookup. A container whose state cannot be read yet (runc writes its
 * state.json after "runc init" already runs in the container's cgroup) is
 * tried again at most once every CONTAINERS_RETRY_MS, for
 * CONTAINERS_GIVE_UP_MS.
 */
#ifndef EG_CONTAINERS_H
#define EG_CONTAINERS_H

#include <stdint.h>

#define CONTAINERS_MAX		4096
#define CONTAINERS_RETRY_MS	50	/* state not written yet: tried again at most this often */
#define CONTAINERS_GIVE_UP_MS	10000	/* ... for this long after the container was first seen */

struct eg_container_info {
	char id[80];
	const char *runtime;		/* "podman", "docker", "containerd", "crio", "lxc", "kubernetes" */
	char *name;			/* NULL: unknown */
	char *image;
	char *pod_name, *pod_namespace, *pod_uid;
};

struct eg_containers;

/* root: where the runtimes' state is looked for ("/" on a host; tests may point elsewhere). */
struct eg_containers *containers_new(const char *root);
void containers_free(struct eg_containers *c);
/* The container of cgroup id (whose path is cgroup), NULL when it is none. */
const struct eg_container_info *containers_get(struct eg_containers *c, uint64_t cgroup_id,
					       const char *cgroup);

/* Frees what containers_read() put in i (and zeroes it). */
void containers_info_clear(struct eg_container_info *i);
/* Reads a container's metadata into ret (id and runtime set); 0 if the runtime's state was found. */
int containers_read(const char *root, struct eg_container_info *ret);

#endif
