/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The control protocol (docs/control.md): one JSON object per line each
 * way. A request is an object with an "op" and the op's fields; a reply is
 * {"ok":true,...} or {"ok":false,"error":"..."}; streaming ops send further
 * lines. Requests are parsed with jansson; everything here validates input
 * from a peer that may be hostile and never trusts a length or a type.
 */
#ifndef EG_CTL_PROTO_H
#define EG_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define CTL_MAX_REQUEST		(256 * 1024)	/* bytes in one request line */
#define CTL_MAX_OP		32

/*
 * Parses one request line (without its '\n'). Returns the object (the
 * caller json_decref()s it) with a valid "op", or NULL and a message.
 */
json_t *ctl_parse_request(const char *line, size_t len, char *err, size_t errlen);
/* The op of a parsed request. */
const char *ctl_op(const json_t *req);

/*
 * Typed field access. Each returns 0, -ENOENT when the field is absent (and
 * not required), or -EINVAL with a message in err for a wrong type or an
 * out-of-range value.
 */
int ctl_get_str(const json_t *req, const char *key, bool required, size_t max_len,
		const char **ret, char *err, size_t errlen);
int ctl_get_int(const json_t *req, const char *key, bool required, int64_t min, int64_t max,
		int64_t *ret, char *err, size_t errlen);
int ctl_get_bool(const json_t *req, const char *key, bool *ret, char *err, size_t errlen);
/* An array of at most max_n strings, each at most max_len bytes; *ret is malloc'd (NULL-terminated). */
int ctl_get_strv(const json_t *req, const char *key, bool required, size_t max_n, size_t max_len,
		 const char ***ret, size_t *ret_n, char *err, size_t errlen);

#endif
