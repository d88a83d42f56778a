/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * SHA-256 (FIPS 180-4), small and self-contained: the policy's identity in
 * events and `policy check` output. Not for secrets: no constant-time care.
 */
#ifndef EG_SHA256_H
#define EG_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_HEX_LEN (2 * SHA256_DIGEST_LEN + 1)

struct sha256_ctx {
	uint32_t h[8];
	uint64_t nbytes;
	uint8_t buf[64];
	size_t buflen;
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);
/* One shot, lower-case hex with the NUL (65 bytes). */
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN]);

#endif
