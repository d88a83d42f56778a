// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/b64.h"
#include "util/hfields.h"

static int64_t get_int(const void *p, size_t size)
{
	switch (size) {
	case 1: return *(const int8_t *)p;
	case 2: return *(const int16_t *)p;
	case 4: return *(const int32_t *)p;
	default: return *(const int64_t *)p;
	}
}

static uint64_t get_uint(const void *p, size_t size)
{
	switch (size) {
	case 1: return *(const uint8_t *)p;
	case 2: return *(const uint16_t *)p;
	case 4: return *(const uint32_t *)p;
	default: return *(const uint64_t *)p;
	}
}

static void put_uint(void *p, size_t size, uint64_t v)
{
	switch (size) {
	case 1: *(uint8_t *)p = v; break;
	case 2: *(uint16_t *)p = v; break;
	case 4: *(uint32_t *)p = v; break;
	default: *(uint64_t *)p = v; break;
	}
}

void eg_hf_write(struct jsonw *w, const void *obj, const struct eg_hfield *t, size_t n, struct eg_hf_fds *fds)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const void *p = (const char *)obj + t[i].off;
		char hex[24], *enc;
		int fd;

		switch (t[i].kind) {
		case EG_HF_BOOL:
			jsonw_bool_field(w, t[i].key, *(const bool *)p);
			break;
		case EG_HF_INT:
			jsonw_int_field(w, t[i].key, get_int(p, t[i].size));
			break;
		case EG_HF_UINT:
			jsonw_uint_field(w, t[i].key, get_uint(p, t[i].size));
			break;
		case EG_HF_HEX:
			snprintf(hex, sizeof(hex), "%" PRIx64, get_uint(p, t[i].size));
			jsonw_string_field(w, t[i].key, hex);
			break;
		case EG_HF_STR:
			jsonw_string_field(w, t[i].key, p);
			break;
		case EG_HF_STR_NULL:
			jsonw_string_field(w, t[i].key, *(const char *)p ? p : NULL);
			break;
		case EG_HF_B64:
			enc = b64_encode(p, strnlen(p, t[i].size));
			if (!enc) {
				w->b->oom = true;
				break;
			}
			jsonw_string_field(w, t[i].key, enc);
			free(enc);
			break;
		case EG_HF_FD:
			fd = *(const int *)p;
			if (fd >= 0 && fds && *fds->n < fds->max) {
				fds->fds[(*fds->n)++] = fd;
				jsonw_int_field(w, t[i].key, fd);
			} else if (fd >= 0 && fds) {
				jsonw_key(w, t[i].key);
				jsonw_null(w);
			} else {
				jsonw_int_field(w, t[i].key, fd);
			}
			break;
		}
	}
}

int eg_hf_read(const json_t *o, void *obj, const struct eg_hfield *t, size_t n)
{
	int rc = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		void *p = (char *)obj + t[i].off;
		const json_t *v = json_object_get(o, t[i].key);
		const char *s = json_string_value(v);
		unsigned char *dec;
		size_t len;

		switch (t[i].kind) {
		case EG_HF_BOOL:
			*(bool *)p = json_is_true(v);
			break;
		case EG_HF_INT:
		case EG_HF_UINT:
			put_uint(p, t[i].size, (uint64_t)json_integer_value(v));
			break;
		case EG_HF_HEX:
			put_uint(p, t[i].size, strtoull(s ? s : "0", NULL, 16));
			break;
		case EG_HF_STR:
		case EG_HF_STR_NULL:
			snprintf(p, t[i].size, "%s", s ? s : "");
			break;
		case EG_HF_B64:
			*(char *)p = '\0';
			if (!s)
				break;
			if (b64_decode(s, strlen(s), &dec, &len)) {
				rc = -EINVAL;
				break;
			}
			snprintf(p, t[i].size, "%.*s", (int)len, (const char *)dec);
			free(dec);
			break;
		case EG_HF_FD:
			*(int *)p = json_is_integer(v) ? (int)json_integer_value(v) : -1;
			break;
		}
	}
	return rc;
}
