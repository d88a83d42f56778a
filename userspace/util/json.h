/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * JSON output for arbitrary bytes. Valid UTF-8 is written as is (control
 * characters, quote and backslash escaped); every byte that is not part of
 * valid UTF-8 is written as the lone surrogate \udcXX (XX = the byte), the
 * "surrogateescape" convention of PEP 383, so a reader recovers the exact
 * bytes. See docs/events.md.
 */
#ifndef EG_JSON_H
#define EG_JSON_H

#include <stddef.h>
#include <stdint.h>
#include "util/sbuf.h"

/* Appends s[0..n) as a quoted JSON string. */
void json_str(struct sbuf *b, const char *s, size_t n);
/* Appends "key": (comma first unless *first) */
void json_key(struct sbuf *b, const char *key, int *first);
/* Length of the valid UTF-8 sequence at s (1-4), or 0 if s[0] starts none. */
size_t utf8_seq_len(const unsigned char *s, size_t n);
/*
 * Parses one record line with jansson. jansson refuses lone surrogates, so
 * a line with \udcXX escapes (bytes that are not UTF-8) is parsed again
 * with each of them read as U+FFFD, as jq does: the exact bytes are in the
 * line, not in the object. NULL when the line is not JSON.
 */
struct json_t;
struct json_t *json_load_record(const char *line, size_t len);
/* Decodes one JSON string body produced by json_str (for tests and tools). */
int json_unescape(const char *s, size_t n, struct sbuf *out);

#endif
