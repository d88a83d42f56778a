// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the policy engine: any bytes go to policy_load_buf;
 * when they load, a few execs made from the same bytes go to policy_eval.
 * Everything is freed, so LeakSanitizer sees a leak as a failure.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "policy/policy.h"

#define MAX_TOKENS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Splits a copy of the input on whitespace into at most MAX_TOKENS words. */
static unsigned int tokens(char *s, size_t n, const char **out)
{
	unsigned int k = 0;
	size_t i = 0;

	while (i < n && k < MAX_TOKENS) {
		while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\0'))
			s[i++] = '\0';
		if (i >= n)
			break;
		out[k++] = s + i;
		while (i < n && s[i] != ' ' && s[i] != '\n' && s[i] != '\t' && s[i] != '\0')
			i++;
	}
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const files[] = { "/usr/bin/rm", "/bin/bash.real", "/opt/x/bin/tool", "curl", "", "/" };
	static const char *const cgroups[] = { NULL, "/", "/system.slice/foo.service", "/a/b/c" };
	struct eg_policy *p = NULL;
	struct eg_diags d = {};
	const char *argv[MAX_TOKENS + 1];
	char *copy;
	unsigned int n, i;

	if (policy_load_buf((const char *)data, size, "fuzz.yaml", &p, &d) == 0) {
		copy = malloc(size + 1);
		if (copy) {
			memcpy(copy, data, size);
			copy[size] = '\0';
			n = tokens(copy, size, argv);
			argv[n] = NULL;
			for (i = 0; i < 8; i++) {
				struct eg_exec_req req = {
					.filename = n && (i & 1) ? argv[i % n] : files[i % 6],
					.argv = argv,
					.argc = n,
					.depth = (int)(i % 4) - 1,
					.cgroup = cgroups[i % 4],
					.euid = i < 4 ? 0 : 1000,
					.depth_known = true,
					.truncated = i == 5,
				};
				struct eg_verdict v;

				policy_eval(p, &req, &v);
				/* Touch what the verdict points at: it must outlive the call. */
				if (v.rule && !v.rule[0] && v.message && v.message[0] == 1)
					abort();
			}
			free(copy);
		}
		policy_free(p);
	}
	eg_diags_free(&d);
	return 0;
}
