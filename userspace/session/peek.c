// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Reading a trapped task's memory with process_vm_readv. Everything here
 * is bounded (a string by its maximum, argv by max_argc and max_bytes) and
 * reads page by page, so a string that ends next to an unmapped page is
 * read whole and a pointer into nowhere fails cleanly. The caller checks
 * SECCOMP_IOCTL_NOTIF_ID_VALID after these reads: until then the memory
 * may belong to another program.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "session/internal.h"

#define PAGE 4096ull

static ssize_t rd(pid_t tid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)addr, n };
	ssize_t r = process_vm_readv(tid, &local, 1, &remote, 1, 0);

	if (r < 0)
		return errno == ESRCH ? -ESRCH : -EFAULT;
	return r;
}

int peek_string(pid_t tid, uint64_t addr, size_t max, char *buf, bool *ret_trunc)
{
	size_t got = 0;

	*ret_trunc = false;
	if (!addr)
		return -EFAULT;
	while (got < max) {
		/* up to the end of the page: the next one may not be mapped */
		size_t chunk = PAGE - ((addr + got) & (PAGE - 1));
		char *nul;
		ssize_t n;

		if (chunk > max - got)
			chunk = max - got;
		n = rd(tid, addr + got, buf + got, chunk);
		if (n <= 0)
			return n < 0 ? (int)n : -EFAULT;
		nul = memchr(buf + got, '\0', n);
		if (nul)
			return 0;
		got += n;
	}
	/* no NUL within max bytes */
	buf[max - 1] = '\0';
	*ret_trunc = true;
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

int peek_argv(pid_t tid, uint64_t addr, uint32_t max_argc, uint64_t max_bytes, char ***ret,
	      unsigned int *ret_argc, uint64_t *ret_bytes, bool *ret_trunc)
{
	char **v = NULL, *buf = NULL;
	uint64_t bytes = 0, ptr;
	unsigned int n = 0, cap = 0;
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
	buf = malloc(max_bytes + 1 > 65536 ? 65536 : max_bytes + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r;
		size_t room, len;
		bool cut;

		r = rd(tid, addr + (uint64_t)n * sizeof(uint64_t), &ptr, sizeof(ptr));
		if (r != sizeof(ptr)) {
			rc = r < 0 ? (int)r : -EFAULT;
			break;
		}
		if (!ptr)
			break;
		if (n >= max_argc || bytes >= max_bytes) {
			/* more than the limits: the rest is not read, and the exec says so */
			trunc = true;
			break;
		}
		room = max_bytes - bytes + 1;
		if (room > 65536)
			room = 65536;
		rc = peek_string(tid, ptr, room, buf, &cut);
		if (rc)
			break;
		if (cut) {
			trunc = true;
			break;
		}
		len = strlen(buf);
		if (n + 1 >= cap) {
			unsigned int nc = cap ? cap * 2 : 16;
			char **nv = realloc(v, (nc + 1) * sizeof(*nv));

			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n] = strdup(buf);
		if (!v[n]) {
			rc = -ENOMEM;
			break;
		}
		n++;
		bytes += len + 1;
	}
	free(buf);
	if (rc) {
		strv_free(v, n);
		return rc;
	}
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	v[n] = NULL;
	*ret = v;
	*ret_argc = n;
	*ret_bytes = bytes;
	*ret_trunc = trunc;
	return 0;
}
