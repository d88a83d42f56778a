// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The shell shim's configuration file and the session name it asks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "unit.h"
#include "shim/shimlib.h"

#define S(lit) lit, sizeof(lit) - 1

static void test_conf(void)
{
	static const char good[] = "# comment\nexecgate=/usr/sbin/execgate\npin_path=/sys/fs/bpf/execgate\n"
				   "socket=/run/execgate/execgate.sock\nfail_open=1\n";
	struct shim_conf c;
	char err[128];

	ASSERT_OK(shim_conf_parse(good, strlen(good), &c, err, sizeof(err)), "a written config");
	ASSERT_STREQ(c.execgate, "/usr/sbin/execgate", "execgate");
	ASSERT_STREQ(c.socket, "/run/execgate/execgate.sock", "socket");
	ASSERT_TRUE(c.fail_open, "fail_open=1");
	ASSERT_ERR(shim_conf_parse(S("execgate=/x\n"), &c, err, sizeof(err)), "socket missing");
	ASSERT_ERR(shim_conf_parse(S("execgate=x\npin_path=/p\nsocket=/s\n"), &c, err, sizeof(err)),
		   "a relative execgate");
	ASSERT_TRUE(strstr(err, "line 1") != NULL, "the line is named");
	ASSERT_ERR(shim_conf_parse(S("execgate=/x\npin_path=/p\nsocket=/s\nfail_open=yes\n"), &c, err, sizeof(err)),
		   "fail_open is 0 or 1");
	ASSERT_ERR(shim_conf_parse(S("execgate=/x\npin_path=/p\nsocket=/s\nbogus=1\n"), &c, err, sizeof(err)),
		   "an unknown key");
	ASSERT_ERR(shim_conf_parse(S("execgate=/x\0y\npin_path=/p\nsocket=/s\n"), &c, err, sizeof(err)),
		   "a NUL byte");
}

static void test_name_clean(void)
{
	char out[SHIM_NAME_MAX + 8], longin[200];

	ASSERT_TRUE(shim_name_clean("agent-7.build_x", out, sizeof(out)), "a clean name");
	ASSERT_STREQ(out, "agent-7.build_x", "kept as is");
	ASSERT_TRUE(shim_name_clean("a b/../c\"d\n second line", out, sizeof(out)), "dirty");
	ASSERT_STREQ(out, "ab..cd", "only [A-Za-z0-9._-], up to the end of the first line");
	ASSERT_FALSE(shim_name_clean("/// \t", out, sizeof(out)), "nothing left");
	memset(longin, 'x', sizeof(longin) - 1);
	longin[sizeof(longin) - 1] = 0;
	ASSERT_TRUE(shim_name_clean(longin, out, sizeof(out)), "long");
	ASSERT_EQ(strlen(out), (size_t)SHIM_NAME_MAX, "at most 63 bytes");
}

static void test_session_name(void)
{
	char dir[] = "/tmp/eg-unit-shim.XXXXXX", base[64], file[96], a[80], b[80], old[4096];
	const char *bases[] = { base, NULL }, *none[] = { "/proc/no/such/dir", NULL };
	FILE *f;

	ASSERT_OK_PTR(mkdtemp(dir), "a temporary directory");
	snprintf(base, sizeof(base), "%s/names", dir);
	shim_session_name("from env!", "/nonexistent", bases, a, sizeof(a));
	ASSERT_STREQ(a, "fromenv", "1. EXECGATE_SESSION_ID");
	snprintf(file, sizeof(file), "%s/sid", dir);
	f = fopen(file, "w");
	fputs("from-file\nnot this\n", f);
	fclose(f);
	shim_session_name("", file, bases, a, sizeof(a));
	ASSERT_STREQ(a, "from-file", "2. the first line of EXECGATE_SESSION_FILE");
	ASSERT_OK_PTR(getcwd(old, sizeof(old)), "cwd");
	ASSERT_OK(chdir(dir), "cd");
	shim_session_name(NULL, NULL, bases, a, sizeof(a));
	shim_session_name(NULL, "/nonexistent", bases, b, sizeof(b));
	ASSERT_STREQ(a, b, "3. one name per workspace, kept");
	ASSERT_TRUE(!strncmp(a, "session-", 8) && strlen(a) == 24, "session-<16 hex>");
	ASSERT_OK(chdir(base), "another workspace");
	shim_session_name(NULL, NULL, bases, b, sizeof(b));
	ASSERT_TRUE(strcmp(a, b) != 0, "another workspace, another name");
	chmod(base, 0777);
	shim_session_name(NULL, NULL, bases, b, sizeof(b));
	ASSERT_STREQ(b, "session-default", "a directory others can write is not used");
	shim_session_name(NULL, NULL, none, b, sizeof(b));
	ASSERT_STREQ(b, "session-default", "4. the fallback");
	ASSERT_OK(chdir(old), "back");
	ASSERT_OK(system("rm -rf /tmp/eg-unit-shim.*"), "clean up");
}

int main(void)
{
	RUN(test_conf);
	RUN(test_name_clean);
	RUN(test_session_name);
	return UNIT_DONE();
}
