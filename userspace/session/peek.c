// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Reading a trapped task's memory with process_vm_readv. Everything here
 * is bounded (a string by its maximum, argv by max_argc and max_bytes).
 *
 * Memory is read in whole pages, several pages per call: every system
 * call costs on these machines, and a path, an argv array and the strings
 * it points to usually sit in one to three pages. A page is readable as a
 * whole or not at all, so reading whole pages answers exactly what reading
 * up to a string's end would: a string that ends next to an unmapped page
 * is read whole, a pointer into nowhere fails cleanly (EFAULT, as the
 * kernel's copy_strings would). Until the notification is found still
 * pending after these reads (request_finish), the memory may belong to
 * another program.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "session/internal.h"

#define PAGE		PEEK_PAGE
#define PAGE_OF(a)	((a) & ~(PAGE - 1))
#define ARGV_TAIL	512	/* an argv array this close to its page's end: read the next page with it */

enum { PG_WANTED, PG_OK, PG_FAULT };

static int find(const struct peek *pk, uint64_t page)
{
	unsigned int i;

	for (i = 0; i < pk->n; i++)
		if (pk->pg[i].addr == page)
			return i;
	return -1;
}

/* Adds page to the next read; false when there is no room left this round. */
static bool want(struct peek *pk, uint64_t addr)
{
	uint64_t page = PAGE_OF(addr);

	if (find(pk, page) >= 0)
		return true;
	if (pk->n == PEEK_PAGES)
		return false;
	pk->pg[pk->n].addr = page;
	pk->pg[pk->n].state = PG_WANTED;
	pk->n++;
	return true;
}

/*
 * Reads every wanted page, in one call when all are mapped. A short read
 * stops at the first page that could not be read: that one is a fault, and
 * the rest is asked again. -ESRCH when the task is gone.
 */
static int fetch(struct peek *pk)
{
	struct iovec local[PEEK_PAGES], remote[PEEK_PAGES];
	unsigned int idx[PEEK_PAGES];

	for (;;) {
		unsigned int i, m = 0;
		ssize_t r;

		for (i = 0; i < pk->n; i++) {
			if (pk->pg[i].state != PG_WANTED)
				continue;
			local[m].iov_base = pk->data + i * PAGE;
			local[m].iov_len = PAGE;
			remote[m].iov_base = (void *)pk->pg[i].addr;
			remote[m].iov_len = PAGE;
			idx[m++] = i;
		}
		if (!m)
			return 0;
		r = process_vm_readv(pk->tid, local, m, remote, m, 0);
		if (r < 0) {
			if (errno == ESRCH)
				return -ESRCH;
			r = 0;		/* the first page failed (EFAULT, or EPERM, ENOMEM: the same to us) */
		}
		for (i = 0; i < m && (uint64_t)r >= (i + 1) * PAGE; i++)
			pk->pg[idx[i]].state = PG_OK;
		if (i < m)
			pk->pg[idx[i]].state = PG_FAULT;
	}
}

/*
 * The bytes at addr up to the end of its page: *ret points at them. Reads
 * the page if it is not here yet (when full, forgets what is: the callers
 * copy what they keep). 0, -EFAULT or -ESRCH.
 */
static int at(struct peek *pk, uint64_t addr, const char **ret, size_t *ret_len)
{
	uint64_t page = PAGE_OF(addr);
	int i = find(pk, page), rc;

	if (i < 0) {
		if (!want(pk, page)) {
			pk->n = 0;
			want(pk, page);
		}
		rc = fetch(pk);
		if (rc)
			return rc;
		i = find(pk, page);
	} else if (pk->pg[i].state == PG_WANTED) {
		rc = fetch(pk);
		if (rc)
			return rc;
	}
	if (pk->pg[i].state != PG_OK)
		return -EFAULT;
	*ret = pk->data + i * PAGE + (addr - page);
	*ret_len = PAGE - (addr - page);
	return 0;
}

/* Up to max bytes of the string at addr into buf (NUL included); cut: no NUL within max. */
static int string_at(struct peek *pk, uint64_t addr, size_t max, char *buf, bool *ret_trunc)
{
	size_t got = 0;

	*ret_trunc = false;
	if (!addr)
		return -EFAULT;
	while (got < max) {
		const char *p, *nul;
		size_t n;
		int rc = at(pk, addr + got, &p, &n);

		if (rc)
			return rc;
		if (n > max - got)
			n = max - got;
		nul = memchr(p, '\0', n);
		if (nul) {
			memcpy(buf + got, p, nul - p + 1);
			return 0;
		}
		memcpy(buf + got, p, n);
		got += n;
	}
	/* no NUL within max bytes */
	buf[max - 1] = '\0';
	*ret_trunc = true;
	return 0;
}

static int u64_at(struct peek *pk, uint64_t addr, uint64_t *ret)
{
	char b[sizeof(*ret)];
	size_t got = 0;

	/* an unaligned array may put a pointer across two pages */
	while (got < sizeof(b)) {
		const char *p;
		size_t n;
		int rc = at(pk, addr + got, &p, &n);

		if (rc)
			return rc;
		if (n > sizeof(b) - got)
			n = sizeof(b) - got;
		memcpy(b + got, p, n);
		got += n;
	}
	memcpy(ret, b, sizeof(b));
	return 0;
}

void strv_free(char **v, unsigned int n)
{
	unsigned int i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int read_argv(struct peek *pk, uint64_t addr, uint32_t max_argc, uint64_t max_bytes, char ***ret,
		     unsigned int *ret_argc, uint64_t *ret_bytes, bool *ret_trunc)
{
	char **v = NULL, *buf = NULL;
	uint64_t bytes = 0, ptr, *ptrs = NULL;
	unsigned int n = 0, cap = 0, np = 0, i;
	bool trunc = false;
	int rc = 0;

	*ret_trunc = false;
	if (!addr) {
		/* argv NULL: the kernel runs the program with argc 0 (and adds "") */
		*ret = calloc(1, sizeof(char *));
		*ret_argc = 0;
		*ret_bytes = 0;
		return *ret ? 0 : -ENOMEM;
	}
	/* the pointers first (up to max_argc and one more, to see the end) */
	for (;;) {
		rc = u64_at(pk, addr + (uint64_t)np * sizeof(uint64_t), &ptr);
		if (rc)
			goto out;
		if (np == cap) {
			unsigned int nc = cap ? cap * 2 : 16;
			uint64_t *nptrs = realloc(ptrs, nc * sizeof(*nptrs));

			if (!nptrs) {
				rc = -ENOMEM;
				goto out;
			}
			ptrs = nptrs;
			cap = nc;
		}
		ptrs[np] = ptr;
		if (!ptr || np == max_argc)
			break;
		np++;
	}
	/* then every page the strings start in, in one read (as many as fit) */
	for (i = 0; i < np && want(pk, ptrs[i]); i++)
		;
	rc = fetch(pk);
	if (rc)
		goto out;
	buf = malloc(max_bytes + 1 > 65536 ? 65536 : max_bytes + 1);
	v = calloc(np + 1, sizeof(*v));
	if (!buf || !v) {
		rc = -ENOMEM;
		goto out;
	}
	for (n = 0; n < np; n++) {
		size_t room, len;
		bool cut;

		if (bytes >= max_bytes) {
			/* more than the limits: the rest is not read, and the exec says so */
			trunc = true;
			break;
		}
		room = max_bytes - bytes + 1;
		if (room > 65536)
			room = 65536;
		rc = string_at(pk, ptrs[n], room, buf, &cut);
		if (rc)
			break;
		if (cut) {
			trunc = true;
			break;
		}
		len = strlen(buf);
		v[n] = malloc(len + 1);
		if (!v[n]) {
			rc = -ENOMEM;
			break;
		}
		memcpy(v[n], buf, len + 1);
		bytes += len + 1;
	}
	/* a pointer past max_argc: argv was longer than the limit */
	if (!rc && n == np && ptrs[np])
		trunc = true;
out:
	free(buf);
	free(ptrs);
	if (rc) {
		strv_free(v, n);
		return rc;
	}
	v[n] = NULL;
	*ret = v;
	*ret_argc = n;
	*ret_bytes = bytes;
	*ret_trunc = trunc;
	return 0;
}

int peek_exec_path(struct peek *pk, pid_t tid, uint64_t path_addr, char *path, size_t path_max,
		   bool *ret_path_trunc, uint64_t argv_addr)
{
	int rc;

	pk->tid = tid;
	pk->n = 0;
	*ret_path_trunc = false;
	/* the path's page and the argv array's, in one call */
	if (path_addr)
		want(pk, path_addr);
	if (argv_addr)
		want(pk, argv_addr);
	/*
	 * An argv array that starts near the end of its page goes on in the
	 * next (a stack often puts it there): that page too, last, so that if
	 * it is not mapped (then the array ends before it) the read of the
	 * others is whole and nothing is asked again.
	 */
	if (argv_addr && PAGE - (argv_addr & (PAGE - 1)) <= ARGV_TAIL)
		want(pk, PAGE_OF(argv_addr) + PAGE);
	rc = fetch(pk);
	if (!rc)
		rc = string_at(pk, path_addr, path_max, path, ret_path_trunc);
	if (rc == -EFAULT)
		path[0] = '\0';	/* the kernel would say EFAULT too */
	return rc;
}

int peek_exec_argv(struct peek *pk, uint64_t argv_addr, uint32_t max_argc, uint64_t max_bytes,
		   char ***ret_argv, unsigned int *ret_argc, uint64_t *ret_bytes, bool *ret_argv_trunc)
{
	return read_argv(pk, argv_addr, max_argc, max_bytes, ret_argv, ret_argc, ret_bytes, ret_argv_trunc);
}

int peek_exec_args(pid_t tid, uint64_t path_addr, char *path, size_t path_max, bool *ret_path_trunc,
		   uint64_t argv_addr, uint32_t max_argc, uint64_t max_bytes, char ***ret_argv,
		   unsigned int *ret_argc, uint64_t *ret_bytes, bool *ret_argv_trunc)
{
	struct peek pk;
	int rc;

	rc = peek_exec_path(&pk, tid, path_addr, path, path_max, ret_path_trunc, argv_addr);
	if (rc || *ret_path_trunc)
		return rc;
	return peek_exec_argv(&pk, argv_addr, max_argc, max_bytes, ret_argv, ret_argc, ret_bytes,
			      ret_argv_trunc);
}
