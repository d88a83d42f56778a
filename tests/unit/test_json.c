// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include "unit.h"
#include <errno.h>
#include <stdint.h>
#include "util/b64.h"
#include "util/json.h"

static bool roundtrip(const char *in, size_t n, const char *want_json)
{
	struct sbuf out = {}, back = {};
	bool ok = true;

	json_str(&out, in, n);
	if (want_json)
		ok &= ASSERT_STREQ(sbuf_cstr(&out), want_json, "encoding");
	ok &= ASSERT_OK(json_unescape(out.data + 1, out.len - 2, &back), "unescape");
	ok &= ASSERT_EQ(back.len, n, "decoded length");
	if (back.len == n && n)
		ok &= ASSERT_MEMEQ(back.data, in, n, "decoded bytes");
	sbuf_free(&out);
	sbuf_free(&back);
	return ok;
}

static void test_json_plain(void)
{
	roundtrip("curl", 4, "\"curl\"");
	roundtrip("", 0, "\"\"");
}

static void test_json_escapes(void)
{
	roundtrip("a\"b\\c\nd\te\r\x01\x1f\x7f", 13, "\"a\\\"b\\\\c\\nd\\te\\r\\u0001\\u001f\\u007f\"");
	roundtrip("nul\0in", 6, "\"nul\\u0000in\"");
}

static void test_json_utf8_kept(void)
{
	roundtrip("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

static void test_json_invalid_utf8_escaped(void)
{
	/* lone continuation, truncated sequence, overlong '/', encoded surrogate, > U+10FFFF */
	roundtrip("\x80", 1, "\"\\udc80\"");
	roundtrip("a\xc3", 2, "\"a\\udcc3\"");
	roundtrip("\xc0\xaf", 2, "\"\\udcc0\\udcaf\"");
	roundtrip("\xed\xb2\x80", 3, "\"\\udced\\udcb2\\udc80\"");
	roundtrip("\xf4\x90\x80\x80", 4, "\"\\udcf4\\udc90\\udc80\\udc80\"");
	roundtrip("\xff\xfe", 2, "\"\\udcff\\udcfe\"");
}

static void test_json_every_byte(void)
{
	char all[256];
	int i;

	for (i = 0; i < 256; i++)
		all[i] = (char)i;
	roundtrip(all, sizeof(all), NULL);
}

static void test_json_random_roundtrip(void)
{
	char buf[64];
	unsigned int seed = 12345;
	int i, j;

	for (i = 0; i < 2000; i++) {
		int n = rand_r(&seed) % (int)sizeof(buf);

		for (j = 0; j < n; j++)
			buf[j] = (char)rand_r(&seed);
		if (!roundtrip(buf, n, NULL))
			break;
	}
}

/*
 * Each byte to escape at each place in plain strings of 1-48 bytes: the
 * scan takes 16 bytes a step (SSE2), so a byte before, in and after each
 * step, and in the tail the step leaves, is escaped, and nothing else is.
 */
static void test_json_escape_at_every_place(void)
{
	static const struct { char c; const char *esc; } cases[] = {
		{ '"', "\\\"" }, { '\\', "\\\\" }, { '\n', "\\n" }, { 0x1f, "\\u001f" },
		{ 0x7f, "\\u007f" }, { (char)0xff, "\\udcff" }, { (char)0x80, "\\udc80" }, { 0x01, "\\u0001" },
	};
	char in[48], want[48 + 16 + 3];
	struct sbuf out = {};
	size_t n, at, k;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (n = 1; n <= sizeof(in); n++)
			for (at = 0; at < n; at++) {
				memset(in, 'a' + (int)(n % 26), n);
				in[at] = cases[k].c;
				snprintf(want, sizeof(want), "\"%.*s%s%.*s\"", (int)at, in, cases[k].esc,
					 (int)(n - at - 1), in + at + 1);
				sbuf_reset(&out);
				json_str(&out, in, n);
				if (!ASSERT_STREQ(sbuf_cstr(&out), want, "escaped in place"))
					goto out;
			}
	/* a valid UTF-8 sequence across a 16-byte step is kept whole */
	memset(in, 'x', sizeof(in));
	memcpy(in + 15, "\xc3\xa9", 2);
	sbuf_reset(&out);
	json_str(&out, in, 20);
	ASSERT_STREQ(sbuf_cstr(&out), "\"xxxxxxxxxxxxxxx\xc3\xa9xxx\"", "UTF-8 across a step");
out:
	sbuf_free(&out);
}

/* Numbers of every size and the split points of the 8-digit pieces, against printf. */
static void test_integers_random(void)
{
	static const uint64_t edges[] = { 99999999ull, 100000000ull, 4294967295ull, 4294967296ull,
					  9999999999999999ull, 10000000000000000ull, 429496729599999999ull,
					  429496729600000000ull, 18446744073709551615ull };
	unsigned int seed = 4242;
	char want[32];
	struct sbuf b = {};

	for (int i = 0; i < 200000; i++) {
		uint64_t v = ((uint64_t)rand_r(&seed) << 42) ^ ((uint64_t)rand_r(&seed) << 21) ^ rand_r(&seed);

		v >>= rand_r(&seed) % 64;
		if (i < (int)(sizeof(edges) / sizeof(edges[0])))
			v = edges[i];
		sbuf_reset(&b);
		sbuf_put_u64(&b, v);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
		if (!ASSERT_STREQ(sbuf_cstr(&b), want, "sbuf_put_u64"))
			break;
		sbuf_reset(&b);
		sbuf_put_udigits(&b, v % 1000000000000ull, 12);
		snprintf(want, sizeof(want), "%012llu", (unsigned long long)(v % 1000000000000ull));
		if (!ASSERT_STREQ(sbuf_cstr(&b), want, "sbuf_put_udigits"))
			break;
	}
	sbuf_free(&b);
}

/* Decimal integers as printf writes them, at every digit count's edges. */
static void test_integers(void)
{
	static const uint64_t edges[] = { 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 9999, 10000,
					  10001, 99999, 100000, 4294967295ull, 4294967296ull,
					  999999999999ull, 1000000000000ull, 9999999999999999999ull,
					  10000000000000000000ull, UINT64_MAX };
	char want[32];
	struct sbuf b = {};
	size_t i;
	int p;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		sbuf_reset(&b);
		sbuf_puts(&b, "x");
		sbuf_put_u64(&b, edges[i]);
		snprintf(want, sizeof(want), "x%llu", (unsigned long long)edges[i]);
		ASSERT_EQ(b.len, strlen(want), want);
		ASSERT_TRUE(!memcmp(b.data, want, b.len), want);
	}
	/* every digit count: 10^k - 1 and 10^k */
	for (uint64_t t = 1, k = 0; k < 20; k++, t *= 10) {
		for (p = 0; p < 2; p++) {
			uint64_t v = t - 1 + p;

			sbuf_reset(&b);
			sbuf_puts(&b, "y");
			sbuf_put_u64(&b, v);
			snprintf(want, sizeof(want), "y%llu", (unsigned long long)v);
			ASSERT_EQ(b.len, strlen(want), want);
			ASSERT_TRUE(!memcmp(b.data, want, b.len), want);
		}
		if (k == 19)
			break;
	}
	for (p = 0; p < 64; p++) {
		int64_t v = (p & 1 ? -1 : 1) * (int64_t)(1ull << (p / 2 * 2 % 63));

		sbuf_reset(&b);
		sbuf_put_i64(&b, v);
		snprintf(want, sizeof(want), "%lld", (long long)v);
		ASSERT_EQ(b.len, strlen(want), want);
		ASSERT_TRUE(!memcmp(b.data, want, b.len), want);
	}
	sbuf_reset(&b);
	sbuf_put_i64(&b, INT64_MIN);
	snprintf(want, sizeof(want), "%lld", (long long)INT64_MIN);
	ASSERT_TRUE(b.len == strlen(want) && !memcmp(b.data, want, b.len), "INT64_MIN");
	sbuf_free(&b);
}

/* Bytes that cross a JSON string as base64 come back the same, at every padding. */
static void test_b64_roundtrip(void)
{
	unsigned char in[300], *out;
	size_t n, len;
	char *enc;
	int bad = 0;

	for (n = 0; n < sizeof(in); n++)
		in[n] = (unsigned char)(n * 37 + 11);
	for (n = 0; n <= sizeof(in); n++) {
		enc = b64_encode(in, n);
		if (!ASSERT_TRUE(enc, "encode"))
			return;
		if (b64_decode(enc, strlen(enc), &out, &len) || len != n || memcmp(out, in, n) ||
		    out[len] != 0)
			bad++;
		else
			free(out);
		free(enc);
	}
	ASSERT_EQ(bad, 0, "lengths that did not round-trip");
	ASSERT_EQ(b64_decode("abc", 3, &out, &len), -EINVAL, "not a multiple of 4");
	ASSERT_EQ(b64_decode("ab!=", 4, &out, &len), -EINVAL, "not base64");
}

int main(void)
{
	RUN(test_b64_roundtrip);
	RUN(test_integers);
	RUN(test_integers_random);
	RUN(test_json_escape_at_every_place);
	RUN(test_json_plain);
	RUN(test_json_escapes);
	RUN(test_json_utf8_kept);
	RUN(test_json_invalid_utf8_escaped);
	RUN(test_json_every_byte);
	RUN(test_json_random_roundtrip);
	return UNIT_DONE();
}
