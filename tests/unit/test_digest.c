// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include "unit.h"
#include "util/digest.h"

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
	struct eg_sha256 *c = eg_sha256_new();
	size_t left = 1000000;

	ASSERT_TRUE(c != NULL, "context");
	memset(chunk, 'a', sizeof(chunk));
	/* An odd chunk size crosses block boundaries at every offset. */
	while (left) {
		size_t n = left < sizeof(chunk) ? left : sizeof(chunk);

		ASSERT_EQ(eg_sha256_update(c, chunk, n), 0, "update");
		left -= n;
	}
	ASSERT_EQ(eg_sha256_final(c, d), 0, "final");
	eg_hex(d, sizeof(d), hex);
	ASSERT_STREQ(hex, want, "one million 'a'");
}

/* RFC 4231 test cases 1 and 6 (a key longer than the block). */
static void test_hmac_sha256_rfc4231(void)
{
	uint8_t key1[20], key6[131], d[SHA256_DIGEST_LEN];
	char hex[SHA256_HEX_LEN];
	const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";

	memset(key1, 0x0b, sizeof(key1));
	ASSERT_EQ(eg_hmac_sha256(key1, sizeof(key1), "Hi There", 8, d), 0, "hmac 1");
	eg_hex(d, sizeof(d), hex);
	ASSERT_STREQ(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", "case 1");
	memset(key6, 0xaa, sizeof(key6));
	ASSERT_EQ(eg_hmac_sha256(key6, sizeof(key6), m6, strlen(m6), d), 0, "hmac 6");
	eg_hex(d, sizeof(d), hex);
	ASSERT_STREQ(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", "case 6");
}

static void test_random_differs(void)
{
	uint8_t a[16] = {}, b[16] = {};

	ASSERT_EQ(eg_random(a, sizeof(a)), 0, "getrandom");
	ASSERT_EQ(eg_random(b, sizeof(b)), 0, "getrandom");
	ASSERT_TRUE(memcmp(a, b, sizeof(a)) != 0, "two draws differ");
}

int main(void)
{
	RUN(test_sha256_empty);
	RUN(test_sha256_abc);
	RUN(test_sha256_two_blocks);
	RUN(test_sha256_million_a_incremental);
	RUN(test_hmac_sha256_rfc4231);
	RUN(test_random_differs);
	return UNIT_DONE();
}
