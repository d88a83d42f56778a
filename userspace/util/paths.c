// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include "util/digest.h"
#include "util/paths.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

void eg_path_normalize(const char *in, char *out, size_t len)
{
	size_t o = 0;
	const char *p = in;

	if (!len)
		return;
	if (*p == '/')
		out[o++] = '/';
	while (*p) {
		const char *e;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		for (e = p; *e && *e != '/'; e++)
			;
		n = e - p;
		if (n == 1 && p[0] == '.') {
			/* nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			/* back up one component, never above the root */
			while (o > 1 && out[o - 1] != '/')
				o--;
			if (o > 1)
				o--;
		} else if (o + (o > 1 || (o == 1 && out[0] != '/') ? 1 : 0) + n < len) {
			if (o > 0 && out[o - 1] != '/')
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p = e;
	}
	out[o] = '\0';
}

int eg_on_bpffs(const char *dir)
{
	struct statfs st;

	if (statfs(dir, &st))
		return -errno;
	return st.f_type == BPF_FS_MAGIC;
}

/* Keeps [A-Za-z0-9_.], '/' -> '-', anything else -> \xNN: distinct paths, distinct names. */
static int escape_name(const char *rel, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (; *rel; rel++) {
		unsigned char c = *rel;

		if (o + 5 >= len)
			return -ENAMETOOLONG;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '_' || (c == '.' && o > 0)) {
			out[o++] = c;
		} else if (c == '/') {
			out[o++] = '-';
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

int eg_paths_resolve(const char *pin_path, struct eg_paths *ret)
{
	char norm[PATH_MAX], real[PATH_MAX], parent[PATH_MAX];
	const char *rel, *slash;
	int n;

	if (!pin_path)
		pin_path = EG_PIN_PATH_DEFAULT;
	if (pin_path[0] != '/')
		return -EINVAL;
	eg_path_normalize(pin_path, norm, sizeof(norm));
	if (!strcmp(norm, "/"))
		return -EINVAL;
	/* Resolve symlinks in what exists; the last component may not exist yet. */
	if (realpath(norm, real)) {
		snprintf(ret->pin, sizeof(ret->pin), "%s", real);
	} else {
		slash = strrchr(norm, '/');
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - norm), norm);
		if (!parent[0])
			strcpy(parent, "/");
		if (realpath(parent, real))
			n = snprintf(ret->pin, sizeof(ret->pin), "%s/%s", strcmp(real, "/") ? real : "",
				     slash + 1);
		else
			n = snprintf(ret->pin, sizeof(ret->pin), "%s", norm);
		if (n < 0 || (size_t)n >= sizeof(ret->pin))
			return -ENAMETOOLONG;
	}
	if (!strcmp(ret->pin, EG_PIN_PATH_DEFAULT)) {
		strcpy(ret->name, "execgate");
	} else {
		rel = ret->pin;
		if (!strncmp(rel, EG_BPFFS_ROOT "/", sizeof(EG_BPFFS_ROOT)))
			rel += sizeof(EG_BPFFS_ROOT);
		if (escape_name(rel, ret->name + 4, sizeof(ret->name) - 4) ||
		    strlen(EG_RUN_DIR) + 1 + 4 + strlen(ret->name + 4) + 5 >= sizeof(ret->sock)) {
			uint8_t d[SHA256_DIGEST_LEN];
			char hex[SHA256_HEX_LEN];

			if (eg_sha256(ret->pin, strlen(ret->pin), d))
				return -EIO;
			eg_hex(d, sizeof(d), hex);
			snprintf(ret->name, sizeof(ret->name), "pin-%.32s", hex);
		} else {
			memcpy(ret->name, "pin-", 4);
		}
	}
	/* the name was sized to fit; the precision only tells the compiler */
	snprintf(ret->sock, sizeof(ret->sock), "%s/%.*s.sock", EG_RUN_DIR,
		 (int)(sizeof(ret->sock) - sizeof(EG_RUN_DIR) - 6), ret->name);
	snprintf(ret->pidfile, sizeof(ret->pidfile), "%s/%s.pid", EG_RUN_DIR, ret->name);
	return 0;
}
