/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The shell shim's pure parts, shared by the shim binary (shim/shim.c, libc
 * only) and `execgate shim` (cli/cmd_shim.c): its configuration file, the
 * marker that tells a shim from a shell, and the session name it asks for.
 */
#ifndef EG_SHIMLIB_H
#define EG_SHIMLIB_H

#include <stdbool.h>
#include <stddef.h>

/* Written by `execgate shim install`, read by every shim at every start. */
#define SHIM_CONF_PATH	"/etc/execgate/shim.conf"
#define SHIM_CONF_MAX	4096
/* In the shim binary's data: how install and uninstall recognise a shim. */
#define SHIM_MARKER	"execgate-shell-shim-v1"
#define SHIM_NAME_MAX	63

struct shim_conf {
	char execgate[256];	/* the execgate binary the shim runs */
	char pin_path[256];	/* the daemon it asks (-p) */
	char socket[108];	/* that daemon's control socket */
	bool fail_open;		/* no daemon: run the shell unsupervised (warned) */
};

/* Parses "key=value" lines; 0, or -1 with err set (a line number and why). */
int shim_conf_parse(const char *buf, size_t len, struct shim_conf *c, char *err, size_t errlen);

/* Keeps [A-Za-z0-9._-] of in, at most SHIM_NAME_MAX bytes; false if nothing is left. */
bool shim_name_clean(const char *in, char *out, size_t outlen);

/*
 * The session name for this shell, shared by sh and bash:
 *   1. $EXECGATE_SESSION_ID
 *   2. the first line of the file $EXECGATE_SESSION_FILE
 *   3. a name kept per workspace (the working directory, by path and by
 *      device and inode) in the first usable directory of bases[], under
 *      an flock, so every shell started there shares it
 *   4. "session-default"
 * env_id/env_file may be NULL. Always fills out.
 */
void shim_session_name(const char *env_id, const char *env_file, const char *const *bases,
		       char *out, size_t outlen);

#endif
