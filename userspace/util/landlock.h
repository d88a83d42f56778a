/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Landlock, the kernel's unprivileged sandbox: the ABI this kernel offers,
 * and one layer made and entered by the calling process (a session's
 * launcher, before it execs the session's command). A Landlocked process
 * cannot ptrace, or open /proc/PID/mem of, a process outside its domain
 * (any ABI); with ABI 6 it cannot signal one either, nor connect to an
 * abstract unix socket made outside it. A layer's file and TCP rules
 * come from a policy's filesystem: and network: sections. Layers stack:
 * an access must pass every layer, so a nested session is never weaker.
 * Library code: 0 or -errno, nothing printed.
 */
#ifndef EG_LANDLOCK_H
#define EG_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What each ABI added (Documentation/userspace-api/landlock.rst). */
#define EG_LL_ABI_FS		1	/* files: read, write, execute, make, remove */
#define EG_LL_ABI_REFER		2	/* renames and links across directories */
#define EG_LL_ABI_TRUNCATE	3	/* truncate(2), O_TRUNC */
#define EG_LL_ABI_NET		4	/* TCP bind and connect by port */
#define EG_LL_ABI_SCOPES	6	/* signals and abstract unix sockets to the outside */
#define EG_LL_ABI_AUDIT		7	/* denials logged to audit, also after an exec */
#define EG_LL_MAX_LAYERS	16	/* the kernel's LANDLOCK_MAX_NUM_LAYERS */

/*
 * The highest ABI the running kernel offers; 0 when it has no Landlock (or
 * it is off). EXECGATE_LANDLOCK_ABI=N in the environment lowers it to N
 * (tests of older kernels).
 */
int eg_landlock_abi(void);

struct eg_ll_paths {
	bool set;			/* the list is there: that kind of access is limited to it */
	const char *const *v;		/* absolute paths */
	size_t n;
};

struct eg_ll_ports {
	bool set;
	const uint16_t *v;
	size_t n;
};

/*
 * One layer. scopes: the session boundary (signals and abstract unix
 * sockets stay inside, ABI 6). read gives reading files and listing
 * directories; write gives writing, making, removing and renaming, and
 * reading; execute gives running programs, and reading (the loader reads
 * them). A path that does not exist gives nothing.
 */
struct eg_ll_layer {
	bool scopes;
	struct eg_ll_paths read, write, execute;
	struct eg_ll_ports connect_tcp, bind_tcp;
};

/* What a layer asks that a kernel of ABI abi cannot hold (EG_LL_MISS_*). */
#define EG_LL_MISS_LANDLOCK	(1u << 0)	/* no Landlock at all: nothing of the layer */
#define EG_LL_MISS_TRUNCATE	(1u << 1)	/* write: truncation is not limited (ABI 3) */
#define EG_LL_MISS_NET		(1u << 2)	/* network: not limited (ABI 4) */
#define EG_LL_MISS_SCOPES	(1u << 3)	/* signals, abstract sockets: not limited (ABI 6) */
unsigned int eg_ll_missing(const struct eg_ll_layer *l, int abi);
/* "network rules (Landlock ABI 4)", one per bit, joined by ", "; "" for none. */
void eg_ll_missing_text(unsigned int missing, char *buf, size_t len);

/*
 * Makes the layer, with what ABI abi can hold of it, and enters it: this
 * process and everything it starts from now on. audit_after_exec: denials
 * are logged to audit after the next exec too (ABI 7). Needs no_new_privs
 * (or CAP_SYS_ADMIN). On failure nothing was entered and err names the
 * step; a path that cannot be opened is not an error (it is not allowed).
 */
int eg_ll_enter(const struct eg_ll_layer *l, int abi, bool audit_after_exec, char *err, size_t errlen);

#endif
