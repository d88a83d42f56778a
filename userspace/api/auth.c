// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The API's bearer tokens: a file of "NAME TOKEN" lines, root's and read
 * by nobody else, read once at start. Only digests are kept, and a token
 * is compared with every one of them in constant time, so neither the
 * answer's time nor a core dump gives one away.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include "api/internal.h"
#include "util/digest.h"

#define TOKEN_MIN	16
#define TOKEN_MAX	256

static bool name_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > 63)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-' || s[i] == '@'))
			return false;
	return true;
}

int auth_load(struct eg_api *a, const char *path, char *err, size_t errlen)
{
	char line[512];
	struct stat st;
	unsigned int lineno = 0;
	FILE *f;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "--api-token-file %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
		snprintf(err, errlen, "--api-token-file %s: must be a regular file owned by root that only root "
			 "may read or write (chown root: %s; chmod 600 %s)", path, path, path);
		close(fd);
		return -EPERM;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *name, *tok;
		size_t nl, tl, i;

		lineno++;
		p[strcspn(p, "\r\n")] = '\0';
		p += strspn(p, " \t");
		if (!*p || *p == '#')
			continue;
		name = p;
		nl = strcspn(name, " \t");
		tok = name + nl;
		tok += strspn(tok, " \t");
		tl = strcspn(tok, " \t");
		if (!name_ok(name, nl) || tl < TOKEN_MIN || tl > TOKEN_MAX || tok[tl + strspn(tok + tl, " \t")]) {
			snprintf(err, errlen, "--api-token-file %s:%u: want 'NAME TOKEN' (a name of [A-Za-z0-9._@-], "
				 "at most 63 bytes; a token of %d to %d bytes without spaces)", path, lineno,
				 TOKEN_MIN, TOKEN_MAX);
			fclose(f);
			return -EINVAL;
		}
		for (i = 0; i < a->ntok; i++)
			if (strlen(a->tok[i].name) == nl && !memcmp(a->tok[i].name, name, nl))
				break;
		if (i < a->ntok || a->ntok == API_MAX_TOKENS) {
			snprintf(err, errlen, "--api-token-file %s:%u: %s", path, lineno,
				 i < a->ntok ? "a name given twice" : "more than 64 tokens");
			fclose(f);
			return -EINVAL;
		}
		memcpy(a->tok[a->ntok].name, name, nl);
		a->tok[a->ntok].name[nl] = '\0';
		eg_sha256(tok, tl, a->tok[a->ntok].sha);
		OPENSSL_cleanse(tok, tl);
		a->ntok++;
	}
	OPENSSL_cleanse(line, sizeof(line));
	fclose(f);
	if (!a->ntok) {
		snprintf(err, errlen, "--api-token-file %s: no token in it (a line 'NAME TOKEN')", path);
		return -EINVAL;
	}
	return 0;
}

const char *auth_check(const struct eg_api *a, const char *header)
{
	const char *found = NULL;
	uint8_t sha[32];
	size_t i, n;

	if (!header || strncasecmp(header, "Bearer ", 7))
		return NULL;
	header += 7;
	header += strspn(header, " ");
	n = strcspn(header, " \t\r\n");
	if (n < TOKEN_MIN || n > TOKEN_MAX)
		return NULL;
	eg_sha256(header, n, sha);
	/* every one compared, whichever matches */
	for (i = 0; i < a->ntok; i++)
		if (!CRYPTO_memcmp(sha, a->tok[i].sha, sizeof(sha)))
			found = a->tok[i].name;
	return found;
}
