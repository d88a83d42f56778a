// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The shell shim's configuration and session name (see shimlib.h). libc only. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shim/shimlib.h"

static int set_str(char *dst, size_t n, const char *v, size_t vlen)
{
	if (vlen >= n)
		return -1;
	memcpy(dst, v, vlen);
	dst[vlen] = 0;
	return 0;
}

int shim_conf_parse(const char *buf, size_t len, struct shim_conf *c, char *err, size_t errlen)
{
	size_t off = 0, line = 0;

	memset(c, 0, sizeof(*c));
	while (off < len) {
		const char *s = buf + off, *nl = memchr(s, '\n', len - off), *eq;
		size_t n = nl ? (size_t)(nl - s) : len - off, klen;
		const char *v;

		off += n + (nl ? 1 : 0);
		line++;
		if (!n || s[0] == '#')
			continue;
		eq = memchr(s, '=', n);
		if (!eq || memchr(s, 0, n)) {
			snprintf(err, errlen, "line %zu: not key=value", line);
			return -1;
		}
		klen = eq - s;
		v = eq + 1;
		n -= klen + 1;
#define KEY(k) (klen == sizeof(k) - 1 && !memcmp(s, k, klen))
		if (KEY("execgate") || KEY("socket") || KEY("pin_path")) {
			char *dst = KEY("execgate") ? c->execgate : KEY("socket") ? c->socket : c->pin_path;
			size_t cap = KEY("execgate") ? sizeof(c->execgate) :
				     KEY("socket") ? sizeof(c->socket) : sizeof(c->pin_path);

			if (!n || v[0] != '/' || set_str(dst, cap, v, n)) {
				snprintf(err, errlen, "line %zu: %.*s must be an absolute path shorter than %zu bytes",
					 line, (int)klen, s, cap);
				return -1;
			}
		} else if (KEY("fail_open")) {
			if (n == 1 && (v[0] == '0' || v[0] == '1'))
				c->fail_open = v[0] == '1';
			else {
				snprintf(err, errlen, "line %zu: fail_open is 0 or 1", line);
				return -1;
			}
		} else {
			snprintf(err, errlen, "line %zu: unknown key '%.*s'", line, (int)(klen > 32 ? 32 : klen), s);
			return -1;
		}
#undef KEY
	}
	if (!c->execgate[0] || !c->socket[0] || !c->pin_path[0]) {
		snprintf(err, errlen, "execgate, pin_path and socket are required");
		return -1;
	}
	return 0;
}

bool shim_name_clean(const char *in, char *out, size_t outlen)
{
	size_t n = 0;

	if (!outlen)
		return false;
	for (; in && *in && *in != '\n' && n + 1 < outlen && n < SHIM_NAME_MAX; in++) {
		unsigned char ch = *in;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '.' || ch == '_' || ch == '-')
			out[n++] = ch;
	}
	out[n] = 0;
	return n > 0;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* A directory only we (or root) can write, made if missing; its fd or -1. */
static int private_dir(const char *path)
{
	struct stat st;
	int fd;

	if (mkdir(path, 0700) && errno != EEXIST)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || (st.st_uid != geteuid() && st.st_uid != 0) ||
	    (st.st_mode & 0022) || access(path, W_OK)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool workspace_name(const char *base, char *out, size_t outlen)
{
	char cwd[4096], file[64], buf[128];
	struct stat st;
	uint64_t h = 0xcbf29ce484222325ULL;
	unsigned char rnd[8];
	bool ok = false;
	ssize_t n;
	int dfd, fd;

	if (!getcwd(cwd, sizeof(cwd)) || stat(".", &st))
		return false;
	h = fnv1a(h, cwd, strlen(cwd));
	h = fnv1a(h, &st.st_dev, sizeof(st.st_dev));
	h = fnv1a(h, &st.st_ino, sizeof(st.st_ino));
	dfd = private_dir(base);
	if (dfd < 0)
		return false;
	snprintf(file, sizeof(file), "ws-%016llx", (unsigned long long)h);
	fd = openat(dfd, file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(dfd);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX))
		goto out;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0) {
		buf[n] = 0;
		if (shim_name_clean(buf, out, outlen)) {
			ok = true;
			goto out;
		}
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		goto out;
	snprintf(buf, sizeof(buf), "session-%02x%02x%02x%02x%02x%02x%02x%02x\n",
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	if (ftruncate(fd, 0) || pwrite(fd, buf, strlen(buf), 0) != (ssize_t)strlen(buf))
		goto out;
	ok = shim_name_clean(buf, out, outlen);
out:
	close(fd);	/* drops the lock */
	return ok;
}

void shim_session_name(const char *env_id, const char *env_file, const char *const *bases,
		       char *out, size_t outlen)
{
	char buf[256];

	if (env_id && shim_name_clean(env_id, out, outlen))
		return;
	if (env_file && env_file[0]) {
		int fd = open(env_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);

			close(fd);
			if (n > 0) {
				buf[n] = 0;
				if (shim_name_clean(buf, out, outlen))
					return;
			}
		}
	}
	for (; bases && *bases; bases++)
		if (workspace_name(*bases, out, outlen))
			return;
	snprintf(out, outlen, "session-default");
}
