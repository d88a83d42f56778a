// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <openssl/evp.h>
#include "util/b64.h"

char *b64_encode(const void *data, size_t n)
{
	char *enc = malloc((n + 2) / 3 * 4 + 1);

	if (enc)
		EVP_EncodeBlock((unsigned char *)enc, data, n);
	return enc;
}

int b64_decode(const char *s, size_t n, unsigned char **ret, size_t *ret_len)
{
	unsigned char *out;
	int len;

	if (n % 4)
		return -EINVAL;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	len = EVP_DecodeBlock(out, (const unsigned char *)s, n);
	if (len < 0) {
		free(out);
		return -EINVAL;
	}
	/* EVP_DecodeBlock counts the padding as bytes */
	if (n && s[n - 1] == '=')
		len--;
	if (n > 1 && s[n - 2] == '=')
		len--;
	out[len] = 0;
	*ret = out;
	*ret_len = len;
	return 0;
}
