// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "util/fileid.h"
#include "util/loaders.h"

/* Where loaders live (multiarch and not), and binaries whose PT_INTERP names the one in use. */
static const char *const lib_dirs[] = {
	"/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32",
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/i386-linux-gnu",
	"/usr/lib/i386-linux-gnu", "/usr/local/lib", "/lib/ld-musl", NULL,
};
static const char *const interp_of[] = {
	"/bin/sh", "/usr/bin/env", "/bin/ls", "/usr/bin/python3", "/proc/self/exe", NULL,
};

bool loaders_has(const struct eg_loaders *l, uint64_t dev, uint64_t ino)
{
	/* the daemon adds while sessions' threads read: an entry is whole before n counts it */
	size_t i, n = __atomic_load_n(&l->n, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (l->l[i].dev == dev && l->l[i].ino == ino)
			return true;
	return false;
}

int loaders_add(struct eg_loaders *l, uint64_t dev, uint64_t ino, const char *path)
{
	if (loaders_has(l, dev, ino))
		return 0;
	if (l->n >= EG_LOADERS_MAX)
		return -ENOSPC;
	l->l[l->n].dev = dev;
	l->l[l->n].ino = ino;
	snprintf(l->l[l->n].path, sizeof(l->l[l->n].path), "%s", path);
	__atomic_store_n(&l->n, l->n + 1, __ATOMIC_RELEASE);
	return 0;
}

int elf_interp(int fd, char *buf, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	unsigned int i;
	ssize_t n;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return -ENOEXEC;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum > 512)
		return -ENOEXEC;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + (off_t)i * sizeof(ph)) != (ssize_t)sizeof(ph))
			return -ENOEXEC;
		if (ph.p_type != PT_INTERP)
			continue;
		if (!ph.p_filesz || ph.p_filesz > len)
			return -ENAMETOOLONG;
		n = pread(fd, buf, ph.p_filesz, ph.p_offset);
		if (n != (ssize_t)ph.p_filesz)
			return -ENOEXEC;
		buf[ph.p_filesz - 1] = '\0';
		return 0;
	}
	return -ENOENT;
}

/* root + path, resolved, its identity added to ret */
static void add_path(const char *root, const char *path, struct eg_loaders *ret)
{
	char full[PATH_MAX], real[PATH_MAX];
	struct stat st;

	if (snprintf(full, sizeof(full), "%s%s", strcmp(root, "/") ? root : "", path) >= (int)sizeof(full))
		return;
	if (stat(full, &st) || !S_ISREG(st.st_mode))
		return;
	if (!realpath(full, real))
		snprintf(real, sizeof(real), "%s", full);
	loaders_add(ret, eg_kdev(st.st_dev), st.st_ino, real);
}

int loaders_find(const char *root, struct eg_loaders *ret)
{
	char path[PATH_MAX], interp[PATH_MAX];
	size_t i;

	memset(ret, 0, sizeof(*ret));
	for (i = 0; interp_of[i]; i++) {
		int fd;

		if (!strcmp(interp_of[i], "/proc/self/exe"))
			snprintf(path, sizeof(path), "%s", interp_of[i]);
		else if (snprintf(path, sizeof(path), "%s%s", strcmp(root, "/") ? root : "", interp_of[i]) >=
			 (int)sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (!elf_interp(fd, interp, sizeof(interp)) && interp[0] == '/')
			add_path(root, interp, ret);
		close(fd);
	}
	for (i = 0; lib_dirs[i]; i++) {
		struct dirent *de;
		DIR *d;

		if (snprintf(path, sizeof(path), "%s%s", strcmp(root, "/") ? root : "", lib_dirs[i]) >=
		    (int)sizeof(path))
			continue;
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (fnmatch("ld-linux*", de->d_name, 0) && fnmatch("ld-musl*", de->d_name, 0))
				continue;
			snprintf(interp, sizeof(interp), "%s/%s", lib_dirs[i], de->d_name);
			add_path(root, interp, ret);
		}
		closedir(d);
	}
	return ret->n ? 0 : -ENOENT;
}

/* path inside the root that root_fd names, as a process there resolves it (its absolute links are its own) */
static int open_in(int root_fd, const char *path, int flags)
{
	struct open_how how = { .flags = flags | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };

	return syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
}

/*
 * The file behind fd as the kernel maps it: overlayfs maps its layer's
 * file, which is what a record's backing names, and what every container
 * of one image shares.
 */
static int mapped_id(int fd, struct stat *ret)
{
	long page = sysconf(_SC_PAGESIZE);
	char link[64];
	void *p;
	int rc;

	p = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/map_files/%lx-%lx", (unsigned long)p, (unsigned long)p + page);
	rc = stat(link, ret) ? -errno : 0;
	munmap(p, page);
	return rc;
}

/*
 * A loader found inside another root: a regular file (looked at before it
 * is opened for reading: a FIFO or a device is never opened), shaped like
 * a loader (an ELF shared object with no PT_INTERP of its own), added by
 * the identity behind it. 1 if added, 0 if not one (or known), -ENOSPC.
 */
static int add_in(int root_fd, const char *path, const char *label, struct eg_loaders *ret)
{
	char interp[8], name[PATH_MAX];
	struct stat st;
	Elf64_Ehdr eh;
	int fd, rfd, rc = 0;

	fd = open_in(root_fd, path, O_PATH);
	if (fd < 0)
		return 0;
	rfd = eg_open_regular(fd, &st);
	if (rfd < 0)
		return 0;
	if (pread(rfd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_type == ET_DYN && elf_interp(rfd, interp, sizeof(interp)) == -ENOENT && !mapped_id(rfd, &st) &&
	    !loaders_has(ret, eg_kdev(st.st_dev), st.st_ino)) {
		snprintf(name, sizeof(name), "%s%s", label, path);
		rc = loaders_add(ret, eg_kdev(st.st_dev), st.st_ino, name);
		rc = rc ? rc : 1;
	}
	close(rfd);
	return rc;
}

int loaders_find_in(int root_fd, const char *label, unsigned int max, struct eg_loaders *ret)
{
	char path[PATH_MAX], interp[PATH_MAX];
	unsigned int added = 0;
	size_t i;
	int rc;

	for (i = 0; interp_of[i] && added < max; i++) {
		int fd;

		if (!strcmp(interp_of[i], "/proc/self/exe"))
			continue;
		fd = open_in(root_fd, interp_of[i], O_RDONLY | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			continue;
		rc = elf_interp(fd, interp, sizeof(interp));
		close(fd);
		if (rc || interp[0] != '/')
			continue;
		rc = add_in(root_fd, interp, label, ret);
		if (rc < 0)
			return rc;
		added += rc;
	}
	for (i = 0; lib_dirs[i] && added < max; i++) {
		struct dirent *de;
		DIR *d;
		int fd = open_in(root_fd, lib_dirs[i], O_RDONLY | O_DIRECTORY);

		if (fd < 0)
			continue;
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			continue;
		}
		while ((de = readdir(d)) && added < max) {
			if (fnmatch("ld-linux*", de->d_name, 0) && fnmatch("ld-musl*", de->d_name, 0))
				continue;
			if (snprintf(path, sizeof(path), "%s/%s", lib_dirs[i], de->d_name) >= (int)sizeof(path))
				continue;
			rc = add_in(root_fd, path, label, ret);
			if (rc < 0) {
				closedir(d);
				return rc;
			}
			added += rc;
		}
		closedir(d);
	}
	return added;
}

unsigned int ldso_target(const char *const *argv, unsigned int argc)
{
	static const char *const value[] = { EG_LDSO_OPTS_VALUE }, *const alone[] = { EG_LDSO_OPTS_ALONE };
	unsigned int i, k;
	bool skip = false;

	/* as far as the kernel side reads: 64 words, none of 4 KiB or more */
	for (i = 1; i < argc; i++) {
		bool opt = false;

		if (i >= 64 || strlen(argv[i]) >= EG_FILENAME_MAX - 1)
			return EG_LOADER_ARG_UNKNOWN;
		if (skip) {
			skip = false;
			continue;
		}
		for (k = 0; k < sizeof(value) / sizeof(value[0]); k++)
			if (!strcmp(argv[i], value[k]))
				skip = opt = true;
		for (k = 0; k < sizeof(alone) / sizeof(alone[0]); k++)
			if (!strcmp(argv[i], alone[k]))
				opt = true;
		/* an option longer than the kernel side compares is no option: the same here */
		if (opt && strlen(argv[i]) < sizeof(struct eg_ldso_opt))
			continue;
		return i;
	}
	return 0;
}
