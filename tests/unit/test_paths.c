// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Daemon naming: every spelling of a pin directory is one daemon, distinct directories are two. */
#include <string.h>
#include "unit.h"
#include "util/paths.h"

static void test_normalize(void)
{
	char out[256];

	eg_path_normalize("/sys/fs/bpf/./x/", out, sizeof(out));
	ASSERT_STREQ(out, "/sys/fs/bpf/x", "./ and trailing /");
	eg_path_normalize("//sys//fs/bpf/y/../x", out, sizeof(out));
	ASSERT_STREQ(out, "/sys/fs/bpf/x", "// and ..");
	eg_path_normalize("/../../x", out, sizeof(out));
	ASSERT_STREQ(out, "/x", ".. never above the root");
	eg_path_normalize("/", out, sizeof(out));
	ASSERT_STREQ(out, "/", "the root");
}

static void test_default(void)
{
	struct eg_paths p;

	ASSERT_OK(eg_paths_resolve(NULL, &p), "default");
	ASSERT_STREQ(p.name, "execgate", "default name");
	ASSERT_STREQ(p.sock, "/run/execgate/execgate.sock", "default socket");
	ASSERT_STREQ(p.pidfile, "/run/execgate/execgate.pid", "default pid file");
	ASSERT_OK(eg_paths_resolve("/sys/fs/bpf/./execgate/", &p), "default, spelled oddly");
	ASSERT_STREQ(p.sock, "/run/execgate/execgate.sock", "same socket");
}

static void test_spellings_and_distinct(void)
{
	struct eg_paths a, b, c, d, e;

	ASSERT_OK(eg_paths_resolve("/tmp/x", &a), "plain");
	ASSERT_OK(eg_paths_resolve("/tmp/./x/", &b), "./ and /");
	ASSERT_OK(eg_paths_resolve("//tmp//x", &c), "//");
	ASSERT_STREQ(a.sock, b.sock, "./x/ is x");
	ASSERT_STREQ(a.sock, c.sock, "//x is x");
	ASSERT_OK(eg_paths_resolve("/tmp/a-b", &d), "a-b");
	ASSERT_OK(eg_paths_resolve("/tmp/a/b", &e), "a/b");
	ASSERT_TRUE(strcmp(d.sock, e.sock) != 0, "a-b and a/b are two daemons");
	ASSERT_TRUE(strcmp(d.pidfile, e.pidfile) != 0, "and two pid files");
	ASSERT_ERR(eg_paths_resolve("relative/x", &a), "relative refused");
	ASSERT_ERR(eg_paths_resolve("/", &a), "the root refused");
}

static void test_long_name_hashed(void)
{
	char longp[400];
	struct eg_paths p, q;

	memset(longp, 'a', sizeof(longp));
	memcpy(longp, "/tmp/", 5);
	longp[sizeof(longp) - 1] = '\0';
	ASSERT_OK(eg_paths_resolve(longp, &p), "long path");
	ASSERT_TRUE(strlen(p.sock) < sizeof(p.sock), "socket path fits sun_path");
	ASSERT_TRUE(!strncmp(p.name, "pin-", 4), "hashed name");
	longp[200] = 'b';
	ASSERT_OK(eg_paths_resolve(longp, &q), "another long path");
	ASSERT_TRUE(strcmp(p.sock, q.sock) != 0, "different long paths, different sockets");
}

int main(void)
{
	RUN(test_normalize);
	RUN(test_default);
	RUN(test_spellings_and_distinct);
	RUN(test_long_name_hashed);
	return UNIT_DONE();
}
