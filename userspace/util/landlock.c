// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Landlock: the ABI, and one layer made and entered (util/landlock.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/types.h>
#include "util/landlock.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset	444
#define __NR_landlock_add_rule		445
#define __NR_landlock_restrict_self	446
#endif

/* The uapi as of ABI 7; the system headers may be older. */
#define LL_CREATE_RULESET_VERSION	(1u << 0)
#define LL_RULE_PATH_BENEATH		1
#define LL_RULE_NET_PORT		2
#define LL_FS_EXECUTE			(1ull << 0)
#define LL_FS_WRITE_FILE		(1ull << 1)
#define LL_FS_READ_FILE			(1ull << 2)
#define LL_FS_READ_DIR			(1ull << 3)
#define LL_FS_REMOVE_DIR		(1ull << 4)
#define LL_FS_REMOVE_FILE		(1ull << 5)
#define LL_FS_MAKE_CHAR			(1ull << 6)
#define LL_FS_MAKE_DIR			(1ull << 7)
#define LL_FS_MAKE_REG			(1ull << 8)
#define LL_FS_MAKE_SOCK			(1ull << 9)
#define LL_FS_MAKE_FIFO			(1ull << 10)
#define LL_FS_MAKE_BLOCK		(1ull << 11)
#define LL_FS_MAKE_SYM			(1ull << 12)
#define LL_FS_REFER			(1ull << 13)
#define LL_FS_TRUNCATE			(1ull << 14)
#define LL_NET_BIND_TCP			(1ull << 0)
#define LL_NET_CONNECT_TCP		(1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET	(1ull << 0)
#define LL_SCOPE_SIGNAL			(1ull << 1)
#define LL_RESTRICT_SELF_LOG_NEW_EXEC_ON	(1u << 1)

struct ll_ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;	/* ABI 4 */
	__u64 scoped;			/* ABI 6 */
};

struct ll_path_beneath_attr {
	__u64 allowed_access;
	__s32 parent_fd;
} __attribute__((packed));

struct ll_net_port_attr {
	__u64 allowed_access;
	__u64 port;
};

#define FS_READ		(LL_FS_READ_FILE | LL_FS_READ_DIR)
#define FS_WRITE	(LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | \
			 LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | \
			 LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM | LL_FS_REFER | LL_FS_TRUNCATE)
/* the rights a rule on a file (not a directory) may hold */
#define FS_FILE		(LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE)

int eg_landlock_abi(void)
{
	long v = syscall(__NR_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	const char *cap = getenv("EXECGATE_LANDLOCK_ABI");

	/* ENOSYS: not built in; EOPNOTSUPP: not in lsm= */
	if (v < 0)
		v = 0;
	/*
	 * Tests pretend an older kernel with it (lower only): a launcher that
	 * sees another ABI than its daemon planned for refuses to start.
	 */
	if (cap && *cap >= '0' && *cap <= '9' && atoi(cap) < v)
		v = atoi(cap);
	return (int)v;
}

static bool any_fs(const struct eg_ll_layer *l)
{
	return l->read.set || l->write.set || l->execute.set;
}

static bool any_net(const struct eg_ll_layer *l)
{
	return l->connect_tcp.set || l->bind_tcp.set;
}

unsigned int eg_ll_missing(const struct eg_ll_layer *l, int abi)
{
	unsigned int m = 0;

	if (abi < EG_LL_ABI_FS)
		return EG_LL_MISS_LANDLOCK;
	if (l->write.set && abi < EG_LL_ABI_TRUNCATE)
		m |= EG_LL_MISS_TRUNCATE;
	if (any_net(l) && abi < EG_LL_ABI_NET)
		m |= EG_LL_MISS_NET;
	if (l->scopes && abi < EG_LL_ABI_SCOPES)
		m |= EG_LL_MISS_SCOPES;
	return m;
}

void eg_ll_missing_text(unsigned int m, char *buf, size_t len)
{
	static const struct { unsigned int bit; const char *text; } t[] = {
		{ EG_LL_MISS_LANDLOCK, "Landlock (the kernel has none, or it is not in lsm=)" },
		{ EG_LL_MISS_TRUNCATE, "limits on truncating files (Landlock ABI 3)" },
		{ EG_LL_MISS_NET, "network rules (Landlock ABI 4)" },
		{ EG_LL_MISS_SCOPES, "signals and abstract unix sockets kept inside (Landlock ABI 6)" },
	};
	size_t i, off = 0;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!(m & t[i].bit))
			continue;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%s", off ? ", " : "", t[i].text);
	}
}

/* What each ABI can handle of the file rights. */
static __u64 fs_known(int abi)
{
	__u64 all = FS_READ | FS_WRITE | LL_FS_EXECUTE;

	if (abi < EG_LL_ABI_REFER)
		all &= ~LL_FS_REFER;
	if (abi < EG_LL_ABI_TRUNCATE)
		all &= ~LL_FS_TRUNCATE;
	return all;
}

static int add_paths(int rs, const struct eg_ll_paths *p, __u64 access, __u64 handled, char *err,
		     size_t errlen)
{
	size_t i;

	for (i = 0; p->set && i < p->n; i++) {
		struct ll_path_beneath_attr pb = { .allowed_access = access & handled };
		struct stat st;

		pb.parent_fd = open(p->v[i], O_PATH | O_CLOEXEC);
		if (pb.parent_fd < 0)
			continue;	/* nothing there, or not ours to reach: nothing allowed */
		if (!fstat(pb.parent_fd, &st) && !S_ISDIR(st.st_mode))
			pb.allowed_access &= FS_FILE;
		if (pb.allowed_access &&
		    syscall(__NR_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0)) {
			int e = -errno;

			snprintf(err, errlen, "landlock_add_rule %s: %s", p->v[i], strerror(-e));
			close(pb.parent_fd);
			return e;
		}
		close(pb.parent_fd);
	}
	return 0;
}

static int add_ports(int rs, const struct eg_ll_ports *p, __u64 access, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; p->set && i < p->n; i++) {
		struct ll_net_port_attr np = { .allowed_access = access, .port = p->v[i] };

		if (syscall(__NR_landlock_add_rule, rs, LL_RULE_NET_PORT, &np, 0)) {
			int e = -errno;

			snprintf(err, errlen, "landlock_add_rule port %u: %s", p->v[i], strerror(-e));
			return e;
		}
	}
	return 0;
}

int eg_ll_enter(const struct eg_ll_layer *l, int abi, bool audit_after_exec, char *err, size_t errlen)
{
	struct ll_ruleset_attr ra = {};
	size_t size = sizeof(ra.handled_access_fs);
	unsigned int flags = 0;
	bool placeholder, refer_all;
	int rs, rc = 0;

	if (abi < EG_LL_ABI_FS) {
		snprintf(err, errlen, "the kernel has no Landlock");
		return -EOPNOTSUPP;
	}
	if (l->read.set)
		ra.handled_access_fs |= FS_READ;
	if (l->write.set)
		ra.handled_access_fs |= FS_WRITE;
	if (l->execute.set)
		ra.handled_access_fs |= LL_FS_EXECUTE;
	ra.handled_access_fs &= fs_known(abi);
	if (abi >= EG_LL_ABI_NET) {
		size = offsetof(struct ll_ruleset_attr, scoped);
		if (l->connect_tcp.set)
			ra.handled_access_net |= LL_NET_CONNECT_TCP;
		if (l->bind_tcp.set)
			ra.handled_access_net |= LL_NET_BIND_TCP;
	}
	if (abi >= EG_LL_ABI_SCOPES) {
		size = sizeof(ra);
		if (l->scopes)
			ra.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
	}
	/*
	 * A domain needs one right handled. Without file or TCP rules and
	 * without scopes (before ABI 6) making block devices is handled and
	 * allowed everywhere: the domain then limits nothing but what any
	 * domain does, ptrace and /proc/PID/mem of processes outside it.
	 */
	if (!ra.handled_access_fs && !ra.handled_access_net && !ra.scoped)
		ra.handled_access_fs = LL_FS_MAKE_BLOCK;
	placeholder = ra.handled_access_fs == LL_FS_MAKE_BLOCK && !any_fs(l);
	/*
	 * Renames and links across directories (ABI 2) are refused by any
	 * layer that limits a file right and does not grant them, handled or
	 * not: a layer without a write list grants them everywhere. What it
	 * limits still holds: a file moved where it would gain a right it
	 * does not have (execute, read) is refused (EXDEV).
	 */
	refer_all = abi >= EG_LL_ABI_REFER && ra.handled_access_fs && !(ra.handled_access_fs & LL_FS_REFER);
	if (refer_all)
		ra.handled_access_fs |= LL_FS_REFER;
	rs = syscall(__NR_landlock_create_ruleset, &ra, size, 0);
	if (rs < 0) {
		rc = -errno;
		snprintf(err, errlen, "landlock_create_ruleset: %s", strerror(-rc));
		return rc;
	}
	if (placeholder || refer_all) {
		static const char *const root[] = { "/" };
		struct eg_ll_paths all = { true, root, 1 };

		rc = add_paths(rs, &all, (placeholder ? LL_FS_MAKE_BLOCK : 0) | (refer_all ? LL_FS_REFER : 0),
			       ra.handled_access_fs, err, errlen);
	}
	/* write and execute imply read: a file written is read back, a program is read by its loader */
	if (!rc)
		rc = add_paths(rs, &l->read, FS_READ, ra.handled_access_fs, err, errlen);
	if (!rc)
		rc = add_paths(rs, &l->write, FS_WRITE | FS_READ, ra.handled_access_fs, err, errlen);
	if (!rc)
		rc = add_paths(rs, &l->execute, LL_FS_EXECUTE | FS_READ, ra.handled_access_fs, err, errlen);
	if (!rc && (ra.handled_access_net & LL_NET_CONNECT_TCP))
		rc = add_ports(rs, &l->connect_tcp, LL_NET_CONNECT_TCP, err, errlen);
	if (!rc && (ra.handled_access_net & LL_NET_BIND_TCP))
		rc = add_ports(rs, &l->bind_tcp, LL_NET_BIND_TCP, err, errlen);
	if (abi >= EG_LL_ABI_AUDIT && audit_after_exec)
		flags |= LL_RESTRICT_SELF_LOG_NEW_EXEC_ON;
	if (!rc && syscall(__NR_landlock_restrict_self, rs, flags)) {
		rc = -errno;
		snprintf(err, errlen, "landlock_restrict_self: %s%s", strerror(-rc),
			 rc == -E2BIG ? " (16 layers at most: sessions nested too deep)" : "");
	}
	close(rs);
	return rc;
}
