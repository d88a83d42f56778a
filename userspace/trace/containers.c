// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>
#include "trace/cgroups.h"
#include "trace/containers.h"
#include "util/clock.h"

#define STATE_MAX	(16u << 20)	/* a state file larger than this is not read */

struct slot {
	uint64_t cgroup_id;		/* 0: free */
	bool container;
	bool complete;			/* the runtime's state was read, or given up on */
	uint64_t retry_ms, give_up_ms;
	struct eg_container_info info;
};

struct eg_containers {
	char root[PATH_MAX];
	struct slot *slots;		/* open addressing, CONTAINERS_MAX * 2 */
	size_t n;
};

void containers_info_clear(struct eg_container_info *i)
{
	free(i->name);
	free(i->image);
	free(i->pod_name);
	free(i->pod_namespace);
	free(i->pod_uid);
	memset(i, 0, sizeof(*i));
}

struct eg_containers *containers_new(const char *root)
{
	struct eg_containers *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->slots = calloc(CONTAINERS_MAX * 2, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	snprintf(c->root, sizeof(c->root), "%s", root && strcmp(root, "/") ? root : "");
	return c;
}

void containers_free(struct eg_containers *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < CONTAINERS_MAX * 2; i++)
		containers_info_clear(&c->slots[i].info);
	free(c->slots);
	free(c);
}

static json_t *load(const char *root, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_t *load(const char *root, const char *fmt, ...)
{
	char rel[PATH_MAX], path[PATH_MAX * 2];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_size > STATE_MAX)
		return NULL;
	return json_load_file(path, JSON_DECODE_ANY, NULL);
}

static void set(char **dst, const char *v)
{
	if (*dst || !v || !*v)
		return;
	*dst = strdup(v);
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The CRI annotations (Kubernetes), containerd's and CRI-O's own names for the same. */
static void annotations(const json_t *a, struct eg_container_info *r)
{
	if (!json_is_object(a))
		return;
	set(&r->name, str(a, "io.kubernetes.container.name"));
	set(&r->name, str(a, "io.kubernetes.cri.container-name"));
	set(&r->name, str(a, "io.kubernetes.cri-o.ContainerName"));
	set(&r->image, str(a, "io.kubernetes.cri.image-name"));
	set(&r->image, str(a, "io.kubernetes.cri-o.ImageName"));
	set(&r->pod_name, str(a, "io.kubernetes.pod.name"));
	set(&r->pod_name, str(a, "io.kubernetes.cri.sandbox-name"));
	set(&r->pod_namespace, str(a, "io.kubernetes.pod.namespace"));
	set(&r->pod_namespace, str(a, "io.kubernetes.cri.sandbox-namespace"));
	set(&r->pod_uid, str(a, "io.kubernetes.pod.uid"));
	set(&r->pod_uid, str(a, "io.kubernetes.cri.sandbox-uid"));
}

/* The OCI bundle's config.json (its annotations) */
static bool bundle(const char *root, const char *dir, struct eg_container_info *r)
{
	json_t *cfg = load(root, "%s/config.json", dir);

	if (!cfg)
		return false;
	annotations(json_object_get(cfg, "annotations"), r);
	json_decref(cfg);
	return true;
}

/* runc's state.json: the bundle is a label ("bundle=DIR"), annotations are labels too */
static bool runc_state(const char *root, const char *state_root, struct eg_container_info *r)
{
	json_t *st = load(root, "%s/%s/state.json", state_root, r->id), *labels, *v;
	bool found = st != NULL;
	size_t i;

	if (!st)
		return false;
	labels = json_object_get(json_object_get(st, "config"), "labels");
	json_array_foreach(labels, i, v) {
		const char *l = json_string_value(v);

		if (l && !strncmp(l, "bundle=", 7))
			bundle(root, l + 7, r);
	}
	json_decref(st);
	return found;
}

/* crun's status file holds the bundle's path among other lines */
static bool crun_state(const char *root, struct eg_container_info *r)
{
	json_t *st = load(root, "/run/crun/%s/status", r->id);
	const char *b;
	bool found = st != NULL;

	if (!st)
		return false;
	b = str(st, "bundle");
	if (b)
		bundle(root, b, r);
	json_decref(st);
	return found;
}

/* containers/storage (podman, CRI-O): the name and the image name */
static bool storage(const char *root, struct eg_container_info *r)
{
	json_t *all = load(root, "/var/lib/containers/storage/overlay-containers/containers.json"), *c;
	bool found = false;
	size_t i;

	json_array_foreach(all, i, c) {
		json_t *md;

		if (!str(c, "id") || strcmp(str(c, "id"), r->id))
			continue;
		found = true;
		md = str(c, "metadata") ? json_loads(str(c, "metadata"), 0, NULL) : NULL;
		set(&r->name, str(md, "name"));
		set(&r->image, str(md, "image-name"));
		set(&r->name, json_string_value(json_array_get(json_object_get(c, "names"), 0)));
		json_decref(md);
		break;
	}
	json_decref(all);
	return found;
}

static bool containerd(const char *root, struct eg_container_info *r)
{
	char pat[PATH_MAX * 2];
	glob_t g = {};
	bool found = false;

	snprintf(pat, sizeof(pat), "%s/run/containerd/io.containerd.runtime.v2.task/*/%s", root, r->id);
	if (!glob(pat, GLOB_NOSORT, NULL, &g) && g.gl_pathc)
		found = bundle("", g.gl_pathv[0], r);
	globfree(&g);
	return found;
}

static bool docker(const char *root, struct eg_container_info *r)
{
	json_t *c = load(root, "/var/lib/docker/containers/%s/config.v2.json", r->id);
	const char *n;

	if (!c)
		return false;
	n = str(c, "Name");
	set(&r->name, n && *n == '/' ? n + 1 : n);
	set(&r->image, str(json_object_get(c, "Config"), "Image"));
	annotations(json_object_get(json_object_get(c, "HostConfig"), "Annotations"), r);
	json_decref(c);
	return true;
}

int containers_read(const char *root, struct eg_container_info *r)
{
	char pat[PATH_MAX * 2];
	bool found = false;
	glob_t g = {};
	size_t i;

	/* runc: podman's and CRI-O's (/run/runc), containerd's (/run/containerd/runc/NS), docker's */
	found |= runc_state(root, "/run/runc", r);
	if (!found) {
		snprintf(pat, sizeof(pat), "%s/run/containerd/runc/*/%s/state.json", root, r->id);
		if (!glob(pat, GLOB_NOSORT, NULL, &g))
			for (i = 0; i < g.gl_pathc && !found; i++) {
				char *dir = g.gl_pathv[i] + strlen(root), *slash;

				slash = strrchr(dir, '/');
				*slash = '\0';
				slash = strrchr(dir, '/');
				*slash = '\0';
				found = runc_state(root, dir, r);
			}
		globfree(&g);
	}
	if (!found)
		found |= runc_state(root, "/run/docker/runtime-runc/moby", r);
	if (!found)
		found |= crun_state(root, r);
	found |= containerd(root, r);
	if (!strcmp(r->runtime, "docker"))
		found |= docker(root, r);
	/* names and images, not the state: a container being created has them first */
	if (!strcmp(r->runtime, "podman") || !strcmp(r->runtime, "crio") || !strcmp(r->runtime, "kubernetes"))
		storage(root, r);
	return found ? 0 : -ENOENT;
}

static struct slot *find(struct eg_containers *c, uint64_t id, bool *ret_new)
{
	size_t mask = CONTAINERS_MAX * 2 - 1, i = (id * 0x9e3779b97f4a7c15ull >> 32) & mask;

	for (;; i = (i + 1) & mask) {
		if (c->slots[i].cgroup_id == id) {
			*ret_new = false;
			return &c->slots[i];
		}
		if (!c->slots[i].cgroup_id) {
			*ret_new = true;
			return &c->slots[i];
		}
	}
}

const struct eg_container_info *containers_get(struct eg_containers *c, uint64_t cgroup_id,
					       const char *cgroup)
{
	struct eg_container ct;
	struct slot *s;
	bool fresh;
	size_t i;

	if (!c || !cgroup_id || !cgroup)
		return NULL;
	s = find(c, cgroup_id, &fresh);
	if (!fresh) {
		if (!s->container)
			return NULL;
		if (s->complete || eg_mono_ms() < s->retry_ms)
			return &s->info;
		/* the runtime had not written its state yet: once more */
		s->complete = !containers_read(c->root, &s->info) || eg_mono_ms() >= s->give_up_ms;
		s->retry_ms = eg_mono_ms() + CONTAINERS_RETRY_MS;
		return &s->info;
	}
	if (c->n >= CONTAINERS_MAX) {
		/* full: start over (containers come and go; ids are not reused) */
		for (i = 0; i < CONTAINERS_MAX * 2; i++) {
			containers_info_clear(&c->slots[i].info);
			memset(&c->slots[i], 0, sizeof(c->slots[i]));
		}
		c->n = 0;
		s = find(c, cgroup_id, &fresh);
	}
	c->n++;
	s->cgroup_id = cgroup_id;
	s->container = !cgroup_container(cgroup, &ct);
	if (!s->container)
		return NULL;
	memcpy(s->info.id, ct.id, sizeof(s->info.id));
	s->info.runtime = ct.runtime;
	if (ct.pod_uid[0])
		s->info.pod_uid = strdup(ct.pod_uid);
	/* a user's own cgroup names no container of the system's runtimes: their state is not read */
	s->complete = ct.user || !containers_read(c->root, &s->info);
	s->retry_ms = eg_mono_ms() + CONTAINERS_RETRY_MS;
	s->give_up_ms = eg_mono_ms() + CONTAINERS_GIVE_UP_MS;
	return &s->info;
}
