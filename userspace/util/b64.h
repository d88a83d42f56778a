/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Base64 (RFC 4648, padded) through libcrypto: bytes that must cross a
 * JSON string whatever they are (process output, a command line that is
 * not UTF-8).
 */
#ifndef EG_B64_H
#define EG_B64_H

#include <stddef.h>

/* data as base64, NUL-terminated, to free; NULL when out of memory. */
char *b64_encode(const void *data, size_t n);
/*
 * s (n characters) decoded into *ret (to free; a NUL follows the bytes)
 * and *ret_len: 0, -EINVAL when it is not padded base64, -ENOMEM.
 */
int b64_decode(const char *s, size_t n, unsigned char **ret, size_t *ret_len);

#endif
