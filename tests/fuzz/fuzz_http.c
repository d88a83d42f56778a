// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the metrics endpoint's request parser
 * (--metrics-listen): any bytes, as they arrive from the network, and
 * every prefix the server may see before the request head is complete.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "daemon/httpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t cut;
	bool head;
	int code;

	if (size > HTTPD_MAX_REQUEST)
		size = HTTPD_MAX_REQUEST;
	for (cut = size > 64 ? size - 64 : 0; cut <= size; cut++) {
		code = httpd_parse_request(buf, cut, &head);
		switch (code) {
		case 0: case 400: case 404: case 405: case 431:
			break;
		case 200:
			/* only GET or HEAD of /metrics is ever answered with the metrics */
			if (cut < 14 || (memcmp(buf, "GET /metrics", 12) && memcmp(buf, "HEAD /metrics", 13)))
				abort();
			if (head != !memcmp(buf, "HEAD ", 5))
				abort();
			break;
		default:
			abort();
		}
		if (code == 431 && cut < HTTPD_MAX_REQUEST)
			abort();
	}
	return 0;
}
