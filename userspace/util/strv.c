// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/strv.h"

int eg_argv_add(char ***v, size_t *n, const char *s, size_t len)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(**v));
	char *c;

	if (!nv)
		return -ENOMEM;
	*v = nv;
	c = strndup(s, len);
	if (!c)
		return -ENOMEM;
	nv[(*n)++] = c;
	nv[*n] = NULL;
	return 0;
}

void eg_argv_free(char **v, size_t n)
{
	while (n)
		free(v[--n]);
	free(v);
}

void eg_copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}
