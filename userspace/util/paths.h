/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Where a daemon lives. A daemon is named by its pin directory (default
 * /sys/fs/bpf/execgate); the directory is canonicalized so that every
 * spelling of it (./, //, a trailing /, ..) names one daemon, and its
 * control socket and pid file under /run/execgate/ are named after it
 * (an injective escaping of the path, or a hash when that is too long).
 */
#ifndef EG_PATHS_H
#define EG_PATHS_H

#include <limits.h>
#include <stddef.h>
#include <sys/un.h>

#define EG_RUN_DIR		"/run/execgate"
#define EG_BPFFS_ROOT		"/sys/fs/bpf"
#define EG_PIN_PATH_DEFAULT	EG_BPFFS_ROOT "/execgate"
#define EG_SOCK_DEFAULT		EG_RUN_DIR "/execgate.sock"
/* A link pinned under PIN/links/ before it replaces the pin of its name (trace/tracer.c) */
#define EG_PIN_NEW_PREFIX	"new_"

struct eg_paths {
	char pin[PATH_MAX];		/* canonical pin directory */
	char name[128];			/* "execgate" for the default */
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char pidfile[PATH_MAX];
};

/* Canonicalizes pin_path (NULL: the default); -EINVAL for a relative or empty path. */
int eg_paths_resolve(const char *pin_path, struct eg_paths *ret);

/* Lexical normalization: collapses //, /./ and /x/.. and drops a trailing /. */
void eg_path_normalize(const char *in, char *out, size_t len);

/* 1 if dir is on a bpffs, 0 if not, -errno. */
int eg_on_bpffs(const char *dir);

#endif
