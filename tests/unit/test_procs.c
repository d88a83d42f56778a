// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The pure parts of daemon-run processes: env blocklist, send-keys names, log tails, signals, the rotating log. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "procs/plog.h"
#include "procs/text.h"
#include "unit.h"

static void test_env_blocklist(void)
{
	const char *bad[] = { "LD_PRELOAD=/x.so", "LD_LIBRARY_PATH", "LD_AUDIT=a", "BASH_ENV=x", "ENV=x",
			      "PROMPT_COMMAND=x", "PYTHONPATH=/p", "BASH_FUNC_f%%=() { :; }", "OPENAI_API_KEY=k",
			      "GITHUB_TOKEN=t", "DB_PASSWORD=p", "PASSWORD=p", "AWS_SECRET_ACCESS_KEY=s",
			      "SECRET_KEY=s", "github_token=t", "PRIVATE_KEY=x", "DATABASE_URL=x", "=x", "",
			      "LD_X=1", "SHELLOPTS=xtrace" };
	const char *good[] = { "PATH=/bin", "HOME=/root", "TOKENIZER=x", "ENVIRONMENT=x", "PAGER=less",
			       "EDITOR=vi", "TMPDIR=/tmp", "LANG=C.UTF-8", "OLD_PWD=x", "NODE_ENV=production" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_TRUE(eg_env_blocked(bad[i], false), bad[i]);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ASSERT_FALSE(eg_env_blocked(good[i], false), good[i]);
	/* a carried shell state also drops the shells' and pagers' settings */
	ASSERT_TRUE(eg_env_blocked("PAGER=less", true), "PAGER in a state");
	ASSERT_TRUE(eg_env_blocked("SHELLOPTS=x", true), "SHELLOPTS in a state");
	ASSERT_TRUE(eg_env_blocked("CDPATH=/", true), "CDPATH in a state");
	ASSERT_FALSE(eg_env_blocked("PATH=/bin", true), "PATH in a state");
}

/* glibc's own list for setuid programs and the interpreters' (issue 18): code loaded by a variable */
static void test_env_injection(void)
{
	const char *inj[] = { "GCONV_PATH=/tmp/g", "LOCPATH=/l", "GLIBC_TUNABLES=x", "HOSTALIASES=/h",
			      "NLSPATH=/n", "RESOLV_HOST_CONF=/r", "RES_OPTIONS=x", "TZDIR=/t", "MALLOC_TRACE=/m",
			      "LD_DEBUG=all", "ld_preload=/x.so", "NODE_OPTIONS=--require /x.js", "PERL5OPT=-Mx",
			      "PERL5LIB=/p", "RUBYOPT=-rx", "PYTHONHOME=/h", "PYTHONSTARTUP=/s",
			      "PYTHONWARNINGS=ignore::x.Y", "JAVA_TOOL_OPTIONS=-javaagent:/a.jar", "OPENSSL_CONF=/c",
			      "BASH_FUNC_ls%%=() { :; }", "LUA_INIT=@/x.lua", "PS4=$(id)" };
	const char *not_inj[] = { "OPENAI_API_KEY=k", "GITHUB_TOKEN=t", "PATH=/bin", "TMPDIR=/tmp",
				  "HOME=/h", "NODE_ENV=x" };
	size_t i;

	for (i = 0; i < sizeof(inj) / sizeof(inj[0]); i++) {
		ASSERT_TRUE(eg_env_injection(inj[i]), inj[i]);
		ASSERT_TRUE(eg_env_blocked(inj[i], false), inj[i]);
	}
	/* an agent wrapped by `execgate exec` keeps its own keys: only a run drops secrets */
	for (i = 0; i < sizeof(not_inj) / sizeof(not_inj[0]); i++)
		ASSERT_FALSE(eg_env_injection(not_inj[i]), not_inj[i]);
}

static void key(const char *word, const char *want, bool named)
{
	struct sbuf b = {};
	bool n = eg_key_encode(word, &b);

	sbuf_putc(&b, 0);
	ASSERT_STREQ(b.data, want, word);
	ASSERT_EQ(n, named, word);
	sbuf_free(&b);
}

static void test_keys(void)
{
	key("Enter", "\r", true);
	key("enter", "\r", true);
	key("Tab", "\t", true);
	key("Escape", "\033", true);
	key("Up", "\033[A", true);
	key("Left", "\033[D", true);
	key("C-c", "\003", true);
	key("C-d", "\004", true);
	key("^C", "\003", true);
	key("M-x", "\033x", true);
	key("F5", "\033[15~", true);
	key("hello world", "hello world", false);
	key("C-", "C-", false);
	key("Upper", "Upper", false);
}

static void test_log_tail(void)
{
	char path[] = "/tmp/egunit-procs-XXXXXX";
	const char *text = "one\ntwo\nthree\nfour\n";
	int fd = mkstemp(path);

	if (!ASSERT_TRUE(fd >= 0, "mkstemp"))
		return;
	unlink(path);
	ASSERT_EQ(write(fd, text, strlen(text)), (long long)strlen(text), "write");
	ASSERT_EQ(eg_log_tail_offset(fd, strlen(text), 1, 1 << 20), 14, "last line");
	ASSERT_EQ(eg_log_tail_offset(fd, strlen(text), 2, 1 << 20), 8, "last two");
	ASSERT_EQ(eg_log_tail_offset(fd, strlen(text), 4, 1 << 20), 0, "all four");
	ASSERT_EQ(eg_log_tail_offset(fd, strlen(text), 9, 1 << 20), 0, "more than there are");
	ASSERT_EQ(eg_log_tail_offset(fd, strlen(text), 0, 1 << 20), (long long)strlen(text), "none");
	/* a last line with no newline counts */
	ASSERT_EQ(eg_log_tail_offset(fd, strlen(text) - 1, 1, 1 << 20), 14, "unterminated last line");
	ASSERT_EQ(eg_log_tail_offset(fd, 0, 3, 1 << 20), 0, "empty");
	/* a long file, scanned in blocks, bounded */
	{
		char line[101];
		int i;

		memset(line, 'x', 99);
		line[99] = '\n';
		line[100] = 0;
		ftruncate(fd, 0);
		for (i = 0; i < 1000; i++)
			pwrite(fd, line, 100, i * 100);
		ASSERT_EQ(eg_log_tail_offset(fd, 100000, 50, 1 << 20), 95000, "50 of 1000 lines");
		ASSERT_EQ(eg_log_tail_offset(fd, 100000, 900, 8192), 100000 - 8192, "bounded scan");
	}
	close(fd);
}

static void test_signals(void)
{
	char b[16];

	ASSERT_EQ(eg_signal_parse("TERM"), SIGTERM, "TERM");
	ASSERT_EQ(eg_signal_parse("sigint"), SIGINT, "sigint");
	ASSERT_EQ(eg_signal_parse("9"), SIGKILL, "9");
	ASSERT_EQ(eg_signal_parse("NOPE"), -1, "NOPE");
	ASSERT_EQ(eg_signal_parse("99"), -1, "99");
	ASSERT_STREQ(eg_signal_name(SIGTERM, b, sizeof(b)), "SIGTERM", "name");
	/* what a status says of a signal without a name reads back */
	ASSERT_STREQ(eg_signal_name(34, b, sizeof(b)), "SIG34", "SIG34");
	ASSERT_EQ(eg_signal_parse(b), 34, "SIG34 parsed");
	ASSERT_EQ(eg_signal_parse("SIG"), -1, "SIG alone");
}

static long long file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) ? -1 : (long long)sb.st_size;
}

static char mirror[12000];	/* what the log was given, by stream offset */

static void append(struct eg_plog *l, const char *data, size_t n)
{
	memcpy(mirror + l->size, data, n);
	ASSERT_OK(plog_append(l, data, n), "append");
}

/* [first, size) reads back as it was written */
static void kept_is(struct eg_plog *l, const char *what)
{
	static char buf[sizeof(mirror)];
	uint64_t first = plog_first(l);

	ASSERT_EQ(plog_pread(l, buf, sizeof(buf), first), l->size - first, what);
	ASSERT_TRUE(!memcmp(buf, mirror + first, l->size - first), what);
}

static void test_plog(void)
{
	char dir[] = "/tmp/egunit-plog-XXXXXX", path[64], old[68], buf[256];
	struct eg_plog l;
	int i;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "mkdtemp"))
		return;
	snprintf(path, sizeof(path), "%s/p-1.log", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	if (!ASSERT_OK(plog_open(&l, path, 100), "open"))
		return;
	/* under the bound: one file, nothing dropped */
	for (i = 0; i < 9; i++) {
		snprintf(buf, sizeof(buf), "line %05d\n", i);
		append(&l, buf, 11);
	}
	ASSERT_EQ(l.size, 99, "size");
	ASSERT_EQ(plog_first(&l), 0, "nothing dropped");
	ASSERT_EQ(file_size(old), -1, "no PATH.1 yet");
	/* 1000 lines of 11 bytes through a 100-byte bound */
	for (; i < 1000; i++) {
		snprintf(buf, sizeof(buf), "line %05d\n", i);
		append(&l, buf, 11);
	}
	ASSERT_EQ(l.size, 11000, "stream size");
	ASSERT_EQ(l.failed, 0, "nothing failed");
	ASSERT_EQ(plog_first(&l), 10800, "the last two files are kept");
	ASSERT_EQ(file_size(path), 100, "PATH");
	ASSERT_EQ(file_size(old), 100, "PATH.1");
	kept_is(&l, "kept 1");
	/* the tail is the real end */
	ASSERT_EQ(plog_tail_offset(&l, 1, 1 << 20), 11000 - 11, "the last line");
	ASSERT_EQ(plog_pread(&l, buf, 11, 11000 - 11), 11, "read it");
	ASSERT_TRUE(!memcmp(buf, "line 00999\n", 11), "it is line 999");
	/* a scan stops at the first byte kept; a dropped offset is refused */
	ASSERT_EQ(plog_tail_offset(&l, 500, 1 << 20), 10800, "more lines than kept");
	ASSERT_EQ(plog_pread(&l, buf, 10, 10799), -ERANGE, "a dropped offset");
	/* lines that straddle the two files read back whole */
	append(&l, "line 01000\nline 01001\n", 22);
	ASSERT_EQ(l.size, 11022, "size 2");
	ASSERT_EQ(plog_first(&l), 10900, "first 2");
	ASSERT_EQ(plog_tail_offset(&l, 3, 1 << 20), 11000 - 11, "three lines across");
	kept_is(&l, "kept 2");
	/* a write bigger than the bound rotates as often as it must */
	memset(buf, 'x', 250);
	append(&l, buf, 250);
	ASSERT_EQ(l.size, 11272, "size 3");
	ASSERT_EQ(plog_first(&l), 11100, "first 3");
	ASSERT_EQ(file_size(path), 72, "PATH 3");
	ASSERT_EQ(file_size(old), 100, "PATH.1 3");
	kept_is(&l, "kept 3");
	/* PATH removed under it (the age cleaning): the next rotation goes on */
	unlink(path);
	append(&l, buf, 40);
	ASSERT_EQ(plog_first(&l), 11200, "first 4");
	ASSERT_EQ(file_size(path), 12, "a new PATH");
	ASSERT_EQ(file_size(old), -1, "the stale PATH.1 is gone");
	kept_is(&l, "kept 4");
	plog_close(&l, true);
	ASSERT_EQ(file_size(path), -1, "removed");
	plog_close(&l, true);	/* twice is fine */
	/* a bound hit exactly, and offsets past the end */
	ASSERT_OK(plog_open(&l, path, 10), "open 2");
	append(&l, "0123456789", 10);
	ASSERT_EQ(plog_first(&l), 0, "a full file is not rotated yet");
	ASSERT_EQ(plog_pread(&l, buf, 10, 10), 0, "at the end");
	ASSERT_EQ(plog_tail_offset(&l, 1, 100), 0, "one unterminated line");
	plog_close(&l, true);
	ASSERT_EQ(rmdir(dir), 0, "nothing left in the directory");
}

int main(void)
{
	RUN(test_env_blocklist);
	RUN(test_env_injection);
	RUN(test_keys);
	RUN(test_log_tail);
	RUN(test_signals);
	RUN(test_plog);
	return UNIT_DONE();
}
