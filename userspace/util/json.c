// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <string.h>
#include <jansson.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include "util/json.h"

size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

static const char hex[] = "0123456789abcdef";

/* Bytes copied as they are: printable ASCII but the quote and the backslash. */
static const bool plain[256] = {
	[0x20 ... 0x21] = true,		/* '"' is 0x22 */
	[0x23 ... 0x5b] = true,		/* '\\' is 0x5c */
	[0x5d ... 0x7e] = true,
};

/*
 * The end of the run of plain bytes from i: 16 bytes a step where SSE2 is
 * (every x86-64), as the byte table says (printable ASCII but '"' and
 * '\\'), the table for the rest. Most strings are one run.
 */
static size_t plain_run(const unsigned char *s, size_t i, size_t n)
{
#ifdef __SSE2__
	const __m128i space = _mm_set1_epi8(' '), quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
		      del = _mm_set1_epi8(0x7f);

	while (i + 16 <= n) {
		__m128i v = _mm_loadu_si128((const __m128i *)(s + i));
		/* signed compare: bytes 0x80-0xff are negative, below ' ' too */
		__m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmpgt_epi8(space, v), _mm_cmpeq_epi8(v, quote)),
					   _mm_or_si128(_mm_cmpeq_epi8(v, bslash), _mm_cmpeq_epi8(v, del)));
		unsigned int mask = (unsigned int)_mm_movemask_epi8(bad);

		if (mask)
			return i + (size_t)__builtin_ctz(mask);
		i += 16;
	}
#endif
	while (i < n && plain[s[i]])
		i++;
	return i;
}

void json_str(struct sbuf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run;

	/* worst case: 6 output bytes per input byte, plus quotes */
	if (sbuf_reserve(b, n + 2))
		return;
	sbuf_putc(b, '"');
	while (i < n) {
		run = plain_run(s, i, n);
		if (run > i) {
			sbuf_put(b, s + i, run - i);
			i = run;
			continue;
		}
		unsigned char c = s[i];
		char esc[6] = { '\\', 'u', '0', '0', 0, 0 };

		if (c >= 0x80) {
			size_t l = utf8_seq_len(s + i, n - i);

			if (l) {
				sbuf_put(b, s + i, l);
				i += l;
				continue;
			}
			esc[2] = 'd';
			esc[3] = 'c';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			sbuf_put(b, esc, 6);
			i++;
			continue;
		}
		switch (c) {
		case '"': sbuf_put(b, "\\\"", 2); break;
		case '\\': sbuf_put(b, "\\\\", 2); break;
		case '\n': sbuf_put(b, "\\n", 2); break;
		case '\t': sbuf_put(b, "\\t", 2); break;
		case '\r': sbuf_put(b, "\\r", 2); break;
		case '\b': sbuf_put(b, "\\b", 2); break;
		case '\f': sbuf_put(b, "\\f", 2); break;
		default:
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			sbuf_put(b, esc, 6);
		}
		i++;
	}
	sbuf_putc(b, '"');
}

void json_key(struct sbuf *b, const char *key, int *first)
{
	if (!*first)
		sbuf_putc(b, ',');
	*first = 0;
	sbuf_putc(b, '"');
	sbuf_puts(b, key);
	sbuf_put(b, "\":", 2);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void put_utf8(struct sbuf *out, uint32_t cp)
{
	char u[4];

	if (cp < 0x80) {
		sbuf_putc(out, cp);
	} else if (cp < 0x800) {
		u[0] = 0xc0 | (cp >> 6);
		u[1] = 0x80 | (cp & 0x3f);
		sbuf_put(out, u, 2);
	} else if (cp < 0x10000) {
		u[0] = 0xe0 | (cp >> 12);
		u[1] = 0x80 | ((cp >> 6) & 0x3f);
		u[2] = 0x80 | (cp & 0x3f);
		sbuf_put(out, u, 3);
	} else {
		u[0] = 0xf0 | (cp >> 18);
		u[1] = 0x80 | ((cp >> 12) & 0x3f);
		u[2] = 0x80 | ((cp >> 6) & 0x3f);
		u[3] = 0x80 | (cp & 0x3f);
		sbuf_put(out, u, 4);
	}
}

static int read_u4(const char *s, size_t n, size_t i, uint32_t *ret)
{
	uint32_t v = 0;
	int k, h;

	if (i + 6 > n || s[i] != '\\' || s[i + 1] != 'u')
		return -EINVAL;
	for (k = 2; k < 6; k++) {
		h = hexval(s[i + k]);
		if (h < 0)
			return -EINVAL;
		v = (v << 4) | h;
	}
	*ret = v;
	return 0;
}

int json_unescape(const char *s, size_t n, struct sbuf *out)
{
	size_t i = 0;
	uint32_t cp, lo;

	while (i < n) {
		if (s[i] != '\\') {
			sbuf_putc(out, s[i++]);
			continue;
		}
		if (i + 1 >= n)
			return -EINVAL;
		switch (s[i + 1]) {
		case '"': sbuf_putc(out, '"'); i += 2; continue;
		case '\\': sbuf_putc(out, '\\'); i += 2; continue;
		case '/': sbuf_putc(out, '/'); i += 2; continue;
		case 'n': sbuf_putc(out, '\n'); i += 2; continue;
		case 't': sbuf_putc(out, '\t'); i += 2; continue;
		case 'r': sbuf_putc(out, '\r'); i += 2; continue;
		case 'b': sbuf_putc(out, '\b'); i += 2; continue;
		case 'f': sbuf_putc(out, '\f'); i += 2; continue;
		case 'u': break;
		default: return -EINVAL;
		}
		if (read_u4(s, n, i, &cp))
			return -EINVAL;
		i += 6;
		if (cp >= 0xdc80 && cp <= 0xdcff) {	/* an escaped raw byte */
			sbuf_putc(out, (char)(cp & 0xff));
			continue;
		}
		if (cp >= 0xd800 && cp <= 0xdbff && !read_u4(s, n, i, &lo) &&
		    lo >= 0xdc00 && lo <= 0xdfff) {
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			i += 6;
		}
		put_utf8(out, cp);
	}
	return out->oom ? -ENOMEM : 0;
}

struct json_t *json_load_record(const char *line, size_t len)
{
	json_t *j = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	struct sbuf b = {};
	size_t i;

	if (j || !memmem(line, len, "\\udc", 4))
		return j;
	for (i = 0; i < len; i++) {
		if (line[i] == '\\' && i + 1 < len && line[i + 1] == '\\') {
			sbuf_put(&b, line + i, 2);
			i++;
		} else if (line[i] == '\\' && i + 5 < len && line[i + 1] == 'u' &&
			   (line[i + 2] == 'd' || line[i + 2] == 'D') && (line[i + 3] == 'c' || line[i + 3] == 'C')) {
			sbuf_puts(&b, "\\ufffd");
			i += 5;
		} else {
			sbuf_putc(&b, line[i]);
		}
	}
	j = b.oom ? NULL : json_loadb(b.data, b.len, JSON_ALLOW_NUL, NULL);
	sbuf_free(&b);
	return j;
}
