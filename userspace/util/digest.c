// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <unistd.h>
#include <sys/random.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "util/digest.h"

int eg_sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN])
{
	unsigned int n = 0;

	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) || n != SHA256_DIGEST_LEN)
		return -EIO;
	return 0;
}

void eg_hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN])
{
	uint8_t d[SHA256_DIGEST_LEN];

	if (eg_sha256(data, len, d)) {
		out[0] = '\0';
		return;
	}
	eg_hex(d, sizeof(d), out);
}

int eg_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		   uint8_t out[SHA256_DIGEST_LEN])
{
	unsigned int n = 0;

	if (!HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &n) || n != SHA256_DIGEST_LEN)
		return -EIO;
	return 0;
}

struct eg_sha256 *eg_sha256_new(void)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (c && !EVP_DigestInit_ex(c, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(c);
		c = NULL;
	}
	return (struct eg_sha256 *)c;
}

int eg_sha256_update(struct eg_sha256 *c, const void *data, size_t len)
{
	return EVP_DigestUpdate((EVP_MD_CTX *)c, data, len) ? 0 : -EIO;
}

int eg_sha256_final(struct eg_sha256 *c, uint8_t out[SHA256_DIGEST_LEN])
{
	unsigned int n = 0;
	int ok = EVP_DigestFinal_ex((EVP_MD_CTX *)c, out, &n);

	EVP_MD_CTX_free((EVP_MD_CTX *)c);
	return ok && n == SHA256_DIGEST_LEN ? 0 : -EIO;
}

int eg_random(void *buf, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t r = getrandom((char *)buf + off, n - off, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += r;
	}
	return 0;
}

int eg_hash_fd(int fd, uint64_t size, uint8_t out[32])
{
	struct eg_sha256 *c;
	char buf[65536];
	uint64_t off = 0;
	ssize_t n;

	if (size > EG_CONTENT_MAX)
		return -EFBIG;
	c = eg_sha256_new();
	if (!c)
		return -ENOMEM;
	while (off < size) {
		n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			eg_sha256_final(c, out);
			return n < 0 ? -errno : -EIO;
		}
		if (eg_sha256_update(c, buf, n)) {
			eg_sha256_final(c, out);
			return -EIO;
		}
		off += n;
	}
	return eg_sha256_final(c, out);
}
