// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/proto.h"

json_t *ctl_parse_request(const char *line, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *req, *op;
	const char *s;
	size_t i, n;

	if (len > CTL_MAX_REQUEST) {
		snprintf(err, errlen, "request too large (more than %u bytes)", CTL_MAX_REQUEST);
		return NULL;
	}
	if (memchr(line, '\0', len)) {
		snprintf(err, errlen, "request contains a NUL byte");
		return NULL;
	}
	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!req) {
		snprintf(err, errlen, "not JSON: %s at column %d", je.text, je.column);
		return NULL;
	}
	if (!json_is_object(req)) {
		snprintf(err, errlen, "a request is a JSON object");
		goto bad;
	}
	op = json_object_get(req, "op");
	if (!json_is_string(op)) {
		snprintf(err, errlen, "the request has no \"op\" string");
		goto bad;
	}
	s = json_string_value(op);
	n = json_string_length(op);
	if (n == 0 || n > CTL_MAX_OP) {
		snprintf(err, errlen, "\"op\" must be 1 to %d characters", CTL_MAX_OP);
		goto bad;
	}
	for (i = 0; i < n; i++) {
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_')) {
			snprintf(err, errlen, "\"op\" is lower-case letters and '_'");
			goto bad;
		}
	}
	return req;
bad:
	json_decref(req);
	return NULL;
}

const char *ctl_op(const json_t *req)
{
	return json_string_value(json_object_get(req, "op"));
}

int ctl_get_str(const json_t *req, const char *key, bool required, size_t max_len,
		const char **ret, char *err, size_t errlen)
{
	json_t *v = json_object_get(req, key);
	size_t n;

	if (!v || json_is_null(v)) {
		if (required) {
			snprintf(err, errlen, "\"%s\" is required", key);
			return -EINVAL;
		}
		return -ENOENT;
	}
	if (!json_is_string(v)) {
		snprintf(err, errlen, "\"%s\" must be a string", key);
		return -EINVAL;
	}
	n = json_string_length(v);
	/* jansson allows \u0000 inside strings; C strings cannot carry it */
	if (n > max_len || strlen(json_string_value(v)) != n) {
		snprintf(err, errlen, "\"%s\" is longer than %zu bytes or contains NUL", key, max_len);
		return -EINVAL;
	}
	*ret = json_string_value(v);
	return 0;
}

int ctl_get_int(const json_t *req, const char *key, bool required, int64_t min, int64_t max,
		int64_t *ret, char *err, size_t errlen)
{
	json_t *v = json_object_get(req, key);
	json_int_t i;

	if (!v || json_is_null(v)) {
		if (required) {
			snprintf(err, errlen, "\"%s\" is required", key);
			return -EINVAL;
		}
		return -ENOENT;
	}
	if (!json_is_integer(v)) {
		snprintf(err, errlen, "\"%s\" must be an integer", key);
		return -EINVAL;
	}
	i = json_integer_value(v);
	if (i < min || i > max) {
		snprintf(err, errlen, "\"%s\" must be between %lld and %lld", key, (long long)min,
			 (long long)max);
		return -EINVAL;
	}
	*ret = i;
	return 0;
}

int ctl_get_bool(const json_t *req, const char *key, bool *ret, char *err, size_t errlen)
{
	json_t *v = json_object_get(req, key);

	if (!v || json_is_null(v))
		return -ENOENT;
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "\"%s\" must be true or false", key);
		return -EINVAL;
	}
	*ret = json_is_true(v);
	return 0;
}

int ctl_get_strv(const json_t *req, const char *key, bool required, size_t max_n, size_t max_len,
		 const char ***ret, size_t *ret_n, char *err, size_t errlen)
{
	json_t *v = json_object_get(req, key), *e;
	const char **out;
	size_t i, n;

	if (!v || json_is_null(v)) {
		if (required) {
			snprintf(err, errlen, "\"%s\" is required", key);
			return -EINVAL;
		}
		return -ENOENT;
	}
	if (!json_is_array(v)) {
		snprintf(err, errlen, "\"%s\" must be an array of strings", key);
		return -EINVAL;
	}
	n = json_array_size(v);
	if (n > max_n) {
		snprintf(err, errlen, "\"%s\" has more than %zu items", key, max_n);
		return -EINVAL;
	}
	out = calloc(n + 1, sizeof(*out));
	if (!out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_array_foreach(v, i, e) {
		if (!json_is_string(e) || json_string_length(e) > max_len ||
		    strlen(json_string_value(e)) != json_string_length(e)) {
			snprintf(err, errlen, "\"%s\"[%zu] must be a string of at most %zu bytes without NUL",
				 key, i, max_len);
			free(out);
			return -EINVAL;
		}
		out[i] = json_string_value(e);
	}
	*ret = out;
	if (ret_n)
		*ret_n = n;
	return 0;
}
