// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The dynamic loaders the kernel knows by identity (map "loaders"): run as
 * a command (`ld.so PROG`), what a loader maps is judged as a program
 * (bpf/loaded.bpf.h). The host's are found at the start. A container's
 * image brings its own ld.so, another file: the root of every mount
 * namespace the daemon sees is searched once, for the processes running at
 * the start and then at the first record of an exec in a namespace not
 * seen before. Each is registered by the file behind it (an overlayfs
 * layer's, which every container of one image shares, and which the
 * kernel compares for an overlayfs view: its record's backing).
 *
 * Only namespaces root made are searched (eg_ns_ours): one a user
 * made may hold mounts the user serves (FUSE: an open there could keep
 * the event loop waiting) and files the user chose (to fill the map).
 *
 * What this does not cover: a rootless container (its namespaces are a
 * user's), a root whose very first exec is its loader (the record that
 * makes us search comes after that exec), and a root whose loaders would
 * not fit the map (EG_LOADERS_MAX; said once, and counted in
 * "loaders_full").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "daemon/daemon_int.h"
#include "util/log.h"
#include "util/ns.h"

#define NS_SEEN		1024	/* namespaces remembered (open addressing); forgotten all at once when 3/4 full */
#define NS_LOADERS_MAX	4	/* loaders taken from one root: a root's owner cannot fill the map alone */

struct ns_seen {
	uint32_t ns[NS_SEEN];
	unsigned int n;
	bool warned;
};

static bool seen(struct ns_seen *s, uint32_t ns, bool add)
{
	unsigned int i = (ns * 2654435761u) & (NS_SEEN - 1);

	for (; s->ns[i]; i = (i + 1) & (NS_SEEN - 1))
		if (s->ns[i] == ns)
			return true;
	if (add) {
		if (s->n >= NS_SEEN * 3 / 4) {
			memset(s->ns, 0, sizeof(s->ns));
			s->n = 0;
			i = (ns * 2654435761u) & (NS_SEEN - 1);
		}
		s->ns[i] = ns;
		s->n++;
	}
	return false;
}

/* Registers what d->loaders holds from index `from` on; -errno when the kernel refuses one. */
static int register_from(struct daemon *d, size_t from)
{
	for (size_t i = from; i < d->loaders.n; i++) {
		int err = tracer_add_loader(d->skel, d->loaders.l[i].dev, d->loaders.l[i].ino);

		if (err) {
			p_err("cannot register the dynamic loader %s: %s", d->loaders.l[i].path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* The loaders under pid's root, if its mount namespace is mnt_ns (not the host's, not seen yet). */
static void search(struct daemon *d, pid_t pid, uint32_t mnt_ns)
{
	char path[64], label[64];
	size_t before = d->loaders.n;
	struct stat st;
	int fd, n;

	if (!mnt_ns || mnt_ns == d->fc.host_mnt_ns || seen(d->ns_seen, mnt_ns, false))
		return;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;		/* gone: the namespace's next record tries again */
	/* still that process (its pid not reused since the record): its namespace now */
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (stat(path, &st) || st.st_ino != mnt_ns) {
		close(fd);
		return;
	}
	seen(d->ns_seen, mnt_ns, true);
	if (!eg_ns_ours(pid, "mnt")) {
		close(fd);
		return;
	}
	snprintf(label, sizeof(label), "mnt:[%u]:", mnt_ns);
	n = loaders_find_in(fd, label, NS_LOADERS_MAX, &d->loaders);
	close(fd);
	if (n == -ENOSPC) {
		d->st.loaders_full++;
		if (!d->ns_seen->warned)
			p_warn("the dynamic loaders' map is full (%d): a loader of mount namespace %u and later ones are "
			       "judged as themselves when run as a command", EG_LOADERS_MAX, mnt_ns);
		d->ns_seen->warned = true;
	}
	if (!d->loaders_started)
		return;		/* the start registers them all at once (daemon_loaders_start) */
	if (register_from(d, before) == 0 && d->loaders.n > before)
		for (size_t i = before; i < d->loaders.n; i++)
			p_info("dynamic loader %s registered", d->loaders.l[i].path);
}

static bool found_now(void *arg, uint64_t dev, uint64_t ino)
{
	return loaders_has(arg, dev, ino);
}

void daemon_loaders_on_exec(struct daemon *d, pid_t pid, uint32_t mnt_ns)
{
	if (d->ns_seen)
		search(d, pid, mnt_ns);
}

int daemon_loaders_start(struct daemon *d)
{
	struct dirent *de;
	DIR *proc;
	int err;

	if (loaders_find("/", &d->loaders))
		p_warn("no dynamic loader found on this host: `ld.so PROGRAM` is judged as ld.so alone");
	d->ns_seen = calloc(1, sizeof(*d->ns_seen));
	if (!d->ns_seen)
		return -ENOMEM;
	/*
	 * The host's and the roots of the mount namespaces running now
	 * (containers started before us) are found first, then what the map
	 * holds beyond them goes, then they are registered.
	 */
	proc = opendir("/proc");
	while (proc && (de = readdir(proc))) {
		char path[64];
		struct stat st;
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid);
		if (!stat(path, &st))
			search(d, (pid_t)pid, (uint32_t)st.st_ino);
	}
	if (proc)
		closedir(proc);
	err = tracer_prune_loaders(d->skel, found_now, &d->loaders);
	if (err > 0)
		p_info("%d dynamic loader(s) of an earlier daemon no longer found: forgotten", err);
	d->loaders_started = true;
	err = register_from(d, 0);
	return err;
}

void daemon_loaders_free(struct daemon *d)
{
	free(d->ns_seen);
	d->ns_seen = NULL;
}
