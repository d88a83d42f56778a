/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Digests and keyed MACs from libcrypto (OpenSSL): the policy's identity
 * (SHA-256 of the file's bytes) and keyed MACs for anything a supervised
 * process must not be able to forge. Returns 0 or -errno.
 */
#ifndef EG_DIGEST_H
#define EG_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_HEX_LEN (2 * SHA256_DIGEST_LEN + 1)

int eg_sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN]);
/* Lower-case hex with the NUL (65 bytes); "" when libcrypto fails. */
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN]);
/* HMAC-SHA-256 (RFC 2104) of data under key. */
int eg_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		   uint8_t out[SHA256_DIGEST_LEN]);
/* Incremental SHA-256 for large or streamed input. */
struct eg_sha256;
struct eg_sha256 *eg_sha256_new(void);
int eg_sha256_update(struct eg_sha256 *c, const void *data, size_t len);
/* Writes the digest and frees c (also on error). */
int eg_sha256_final(struct eg_sha256 *c, uint8_t out[SHA256_DIGEST_LEN]);
/* n bytes from the kernel's CSPRNG (getrandom). */
/* SHA-256 of the first size bytes of fd (pread; size <= EG_CONTENT_MAX). */
#define EG_CONTENT_MAX		(64u << 20)	/* a file larger than this is not hashed */
int eg_hash_fd(int fd, uint64_t size, uint8_t out[SHA256_DIGEST_LEN]);
int eg_random(void *buf, size_t n);
void eg_hex(const uint8_t *in, size_t n, char *out);

#endif
