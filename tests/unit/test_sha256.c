// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include "unit.h"
#include "sha256.h"

/* FIPS 180-4 / NIST CSRC example vectors. */
static void test_sha256_empty(void)
{
	char hex[SHA256_HEX_LEN];

	sha256_hex("", 0, hex);
	ASSERT_STREQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256(\"\")");
}

static void test_sha256_abc(void)
{
	char hex[SHA256_HEX_LEN];

	sha256_hex("abc", 3, hex);
	ASSERT_STREQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256(\"abc\")");
}

static void test_sha256_two_blocks(void)
{
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char hex[SHA256_HEX_LEN];

	sha256_hex(m, strlen(m), hex);
	ASSERT_STREQ(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448-bit message");
}

static void test_sha256_million_a_incremental(void)
{
	static const char *want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	uint8_t d[SHA256_DIGEST_LEN];
	char chunk[997], hex[SHA256_HEX_LEN];
	struct sha256_ctx c;
	size_t left = 1000000;
	int i;

	memset(chunk, 'a', sizeof(chunk));
	sha256_init(&c);
	/* An odd chunk size crosses block boundaries at every offset. */
	while (left) {
		size_t n = left < sizeof(chunk) ? left : sizeof(chunk);

		sha256_update(&c, chunk, n);
		left -= n;
	}
	sha256_final(&c, d);
	for (i = 0; i < SHA256_DIGEST_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	ASSERT_STREQ(hex, want, "one million 'a'");
}

int main(void)
{
	RUN(test_sha256_empty);
	RUN(test_sha256_abc);
	RUN(test_sha256_two_blocks);
	RUN(test_sha256_million_a_incremental);
	return UNIT_DONE();
}
