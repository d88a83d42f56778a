// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the control socket's request parser: the input is
 * what a hostile peer writes, cut into lines the way the server cuts it;
 * every line goes to ctl_parse_request, and a request that parses is read
 * with the typed getters the ops use (strings, integers, booleans, string
 * arrays, with their bounds). Everything is freed, so LeakSanitizer sees a
 * leak as a failure.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_fields(const json_t *req)
{
	static const char *const keys[] = { "op", "id", "name", "reason", "fd", "watch", "restricted",
					    "policy", "argv", "env", "" };
	char err[256];
	const char *s, **v;
	int64_t i;
	bool b;
	size_t k, n;

	if (strlen(ctl_op(req)) > CTL_MAX_OP)
		abort();
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		if (!ctl_get_str(req, keys[k], k & 1, 23 + k * 40, &s, err, sizeof(err)) &&
		    strlen(s) > 23 + k * 40)
			abort();
		if (!ctl_get_int(req, keys[k], false, 1, UINT32_MAX, &i, err, sizeof(err)) &&
		    (i < 1 || i > UINT32_MAX))
			abort();
		ctl_get_int(req, keys[k], true, INT64_MIN, INT64_MAX, &i, err, sizeof(err));
		ctl_get_bool(req, keys[k], &b, err, sizeof(err));
		if (!ctl_get_strv(req, keys[k], false, 8, 64, &v, &n, err, sizeof(err))) {
			if (n > 8 || v[n])
				abort();
			while (n--)
				if (strlen(v[n]) > 64)
					abort();
			free(v);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	char err[256];

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = (nl ? nl : end) - p;
		json_t *req;

		err[0] = '\0';
		req = ctl_parse_request(p, len, err, sizeof(err));
		if (req) {
			read_fields(req);
			json_decref(req);
		} else if (!err[0]) {
			abort();	/* a refusal always says why */
		}
		p += len + 1;
	}
	return 0;
}
