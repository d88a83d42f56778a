// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The pure parts of daemon-run processes: env blocklist, send-keys names, log tails, signals. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "procs/text.h"
#include "unit.h"

static void test_env_blocklist(void)
{
	const char *bad[] = { "LD_PRELOAD=/x.so", "LD_LIBRARY_PATH", "LD_AUDIT=a", "BASH_ENV=x", "ENV=x",
			      "PROMPT_COMMAND=x", "PYTHONPATH=/p", "BASH_FUNC_f%%=() { :; }", "OPENAI_API_KEY=k",
			      "GITHUB_TOKEN=t", "DB_PASSWORD=p", "PASSWORD=p", "AWS_SECRET_ACCESS_KEY=s",
			      "SECRET_KEY=s", "github_token=t", "PRIVATE_KEY=x", "DATABASE_URL=x", "=x", "" };
	const char *good[] = { "PATH=/bin", "HOME=/root", "TOKENIZER=x", "LD_X=1", "ENVIRONMENT=x", "PAGER=less",
			       "EDITOR=vi", "SHELLOPTS=x" };
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
}

int main(void)
{
	RUN(test_env_blocklist);
	RUN(test_keys);
	RUN(test_log_tail);
	RUN(test_signals);
	return UNIT_DONE();
}
