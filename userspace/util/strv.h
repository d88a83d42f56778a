/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* NULL-terminated string vectors (argv, environments) grown one string at a time. */
#ifndef EG_UTIL_STRV_H
#define EG_UTIL_STRV_H

#include <stddef.h>

/* Appends a copy of s[0..len) to *v (n of them, NULL after the last); -ENOMEM leaves *v valid. */
int eg_argv_add(char ***v, size_t *n, const char *s, size_t len);
/* Frees the n strings of v and v. */
void eg_argv_free(char **v, size_t n);
/* snprintf(dst, size, "%s", src) without printf's parse of its format (size > 0). */
void eg_copy_str(char *dst, size_t size, const char *src);

#endif
