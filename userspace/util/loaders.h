/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The dynamic loaders of this host, known by file identity: run as a
 * command (`ld-linux-x86-64.so.2 PROG ARGS`) a loader is a program
 * launcher, and PROG is judged as a program. Found from the PT_INTERP of
 * the host's own binaries and every ld-linux*, ld-musl* in the library
 * directories; a copy elsewhere is another file (docs/enforcement.md).
 */
#ifndef EG_LOADERS_H
#define EG_LOADERS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "execgate.h"

struct eg_loaders {
	size_t n;
	struct {
		uint64_t dev, ino;	/* kernel dev encoding */
		char path[PATH_MAX];	/* where it was found (resolved) */
	} l[EG_LOADERS_MAX];
};

/* Fills ret with the loaders under root ("/" or a container's root); 0 or -errno. */
int loaders_find(const char *root, struct eg_loaders *ret);
/*
 * Adds the loaders of another root (a container's, root_fd from
 * /proc/PID/root), found as a process there finds them and known by the
 * file behind each (an overlayfs layer's); at most max of them, each named
 * label + its path there. The number added, or -ENOSPC when ret is full.
 */
int loaders_find_in(int root_fd, const char *label, unsigned int max, struct eg_loaders *ret);
bool loaders_has(const struct eg_loaders *l, uint64_t dev, uint64_t ino);
/* Adds one (deduplicated); -ENOSPC when full. */
int loaders_add(struct eg_loaders *l, uint64_t dev, uint64_t ino, const char *path);

/*
 * The argv index of the program a loader run as a command was asked to
 * run, after the loader's own options (EG_LDSO_OPTS_*, as the kernel side
 * reads them); 0 when there is none (`ld.so --help`), EG_LOADER_ARG_UNKNOWN when it cannot be
 * told (more options than the kernel side reads: the caller fails closed).
 */
unsigned int ldso_target(const char *const *argv, unsigned int argc);

/* PT_INTERP of the ELF file at fd into buf; -ENOENT when it has none, -ENOEXEC when not ELF. */
int elf_interp(int fd, char *buf, size_t len);

#endif
