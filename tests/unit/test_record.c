// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Record decoding, event formatting and option limits, without a kernel. */
#include <errno.h>
#include <string.h>
#include <linux/types.h>
#include "unit.h"
#include "execgate.h"
#include "events/format.h"
#include "util/json.h"
#include "trace/record.h"
#include "util/units.h"

/* Builds a record the way the BPF side lays it out. */
static size_t mkrec(char *buf, __u32 type, __u32 flags, const char *fn, size_t fnlen,
		    const char *cwd, size_t cwdlen, const char *argv, size_t argvlen, __u32 argc)
{
	struct eg_event h = {
		.type = type, .flags = flags, .pid = 42, .tid = 43, .ppid = 1, .uid = 1000,
		.gid = 1000, .depth = 2, .ktime_ns = 5000000000ull, .argc = argc,
		.argv_bytes = argvlen, .filename_len = fnlen, .cwd_len = cwdlen, .argv_len = argvlen,
		.parent_tgid = 41, .parent_ktime_ns = 4000000000ull, .cgroup_id = 7,
	};
	size_t off = sizeof(h);

	strcpy(h.comm, "curl");
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + off, fn, fnlen);
	off += fnlen;
	memcpy(buf + off, cwd, cwdlen);
	off += cwdlen;
	memcpy(buf + off, argv, argvlen);
	return off + argvlen;
}

static char rec[8192];

static void test_decode_exec(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	size_t n = mkrec(rec, EG_EVENT_EXEC, EG_F_PARENT_KNOWN, "/usr/bin/curl", 14,
			 "b\0a\0", 4, "curl\0-X\0POST\0\0", 14, 4);

	if (!ASSERT_OK(record_decode(&d, rec, n, &r), "decode"))
		return;
	ASSERT_EQ(r.filename.len, 13, "filename without NUL");
	ASSERT_MEMEQ(r.filename.p, "/usr/bin/curl", 13, "filename");
	ASSERT_EQ(r.cwd.len, 4, "cwd length");
	ASSERT_MEMEQ(r.cwd.p, "/a/b", 4, "cwd rebuilt root first");
	ASSERT_EQ(r.argv_kept, 4, "argv count incl. the empty one");
	ASSERT_MEMEQ(r.argv[2].p, "POST", 4, "argv[2]");
	ASSERT_EQ(r.argv[3].len, 0, "empty argument kept");
	ASSERT_FALSE(r.argv_truncated, "not truncated");
	decoder_free(&d);
}

static void test_decode_root_cwd(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	size_t n = mkrec(rec, EG_EVENT_EXEC, 0, "/bin/true", 10, "", 0, "true\0", 5, 1);

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	ASSERT_EQ(r.cwd.len, 1, "root is /");
	ASSERT_EQ(r.cwd.p[0], '/', "root");
	decoder_free(&d);
}

static void test_decode_cut_argv_at_boundary(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	/* the kernel copied 12 bytes of "aaaa\0bbbb\0cccccc\0": the third is partial */
	size_t n = mkrec(rec, EG_EVENT_EXEC, EG_F_ARGV_TRUNC, "/x", 3, "", 0, "aaaa\0bbbb\0cc", 12, 3);

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	ASSERT_EQ(r.argv_kept, 2, "only whole arguments");
	ASSERT_TRUE(r.argv_truncated, "flagged");
	decoder_free(&d);
}

static void test_decode_missing_args_flagged(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	/* no flag from the kernel, but fewer arguments than argc: never silent */
	size_t n = mkrec(rec, EG_EVENT_EXEC, 0, "/x", 3, "", 0, "a\0", 2, 5);

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	ASSERT_TRUE(r.argv_truncated, "argc > kept is truncation");
	decoder_free(&d);
}

static void test_decode_rejects_bad_lengths(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	struct eg_event *h = (struct eg_event *)rec;
	size_t n = mkrec(rec, EG_EVENT_EXEC, 0, "/x", 3, "", 0, "a\0", 2, 1);

	ASSERT_ERR(record_decode(&d, rec, n - 1, &r), "record shorter than its lengths");
	ASSERT_ERR(record_decode(&d, rec, sizeof(*h) - 1, &r), "shorter than a header");
	h->argv_len = 0xffffffff;
	ASSERT_ERR(record_decode(&d, rec, n, &r), "absurd argv_len");
	n = mkrec(rec, 99, 0, "/x", 3, "", 0, "a\0", 2, 1);
	ASSERT_ERR(record_decode(&d, rec, n, &r), "unknown type");
	decoder_free(&d);
}

static void test_format_json_exec(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	struct sbuf b = {};
	struct eg_annotation a = { "deny", "block-curl", "no", "would-block" };
	size_t n = mkrec(rec, EG_EVENT_EXEC, EG_F_PARENT_KNOWN, "/usr/bin/curl", 14, "a\0", 2,
			 "curl\0a\nb\0\xff\0", 11, 3);
	const char *s;

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	format_record_json(&b, &r, 1000000000, &a);
	s = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(s, "{\"v\":1,\"type\":\"exec\",\"time\":\"1970-01-01T00:00:06.000000000Z\"") == s,
		    "prefix and time (boot 5s + offset 1s)");
	ASSERT_TRUE(strstr(s, "\"exec_id\":\"42:5000000000\",\"parent_exec_id\":\"41:4000000000\"") != NULL, "ids");
	ASSERT_TRUE(strstr(s, "\"argv\":[\"curl\",\"a\\nb\",\"\\udcff\"],\"argc\":3") != NULL, "argv");
	ASSERT_TRUE(strstr(s, "\"cwd\":\"/a\"") != NULL, "cwd");
	ASSERT_TRUE(strstr(s, "\"depth\":2,\"session\":null,\"cgroup_id\":7") != NULL, "depth");
	ASSERT_TRUE(strstr(s, "\"decision\":\"deny\",\"rule\":\"block-curl\",\"message\":\"no\",\"action\":\"would-block\"}\n") != NULL,
		    "annotation last");
	ASSERT_EQ(strchr(s, '\n') - s, (long)b.len - 1, "one line");
	sbuf_free(&b);
	decoder_free(&d);
}

static void test_format_json_failed(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	struct sbuf b = {};
	size_t n = mkrec(rec, EG_EVENT_EXEC_FAILED, EG_F_EXECVEAT, "x", 2, "", 0, "x\0", 2, 1);
	const char *s;

	((struct eg_event *)rec)->err = -ENOENT;
	((struct eg_event *)rec)->dirfd = 3;
	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	format_record_json(&b, &r, 0, NULL);
	s = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(s, "\"type\":\"exec_failed\"") != NULL, "type");
	ASSERT_TRUE(strstr(s, "\"exec_id\":null,\"parent_exec_id\":null") != NULL, "no ids");
	ASSERT_TRUE(strstr(s, "\"syscall\":\"execveat\",\"errno\":2,\"error\":\"ENOENT\",\"dirfd\":3") != NULL, "errno");
	ASSERT_TRUE(strstr(s, "decision") == NULL, "no annotation without a policy");
	sbuf_free(&b);
	decoder_free(&d);
}

static void test_format_text(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	struct sbuf b = {};
	size_t n = mkrec(rec, EG_EVENT_EXEC, 0, "/bin/echo", 10, "", 0, "echo\0hello world\0it's\0\x01\0", 24, 4);
	const char *s;

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	format_record_text(&b, &r, 0, NULL);
	s = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(s, " 42 ") != NULL, "pid");
	ASSERT_TRUE(strstr(s, "echo 'hello world' 'it'\\''s' \\x01\n") != NULL, "shell quoting and escapes");
	sbuf_free(&b);
	decoder_free(&d);
}

static void test_parse_size_limits(void)
{
	uint64_t v = 0;

	ASSERT_OK(parse_size("4096", &v), "plain");
	ASSERT_EQ(v, 4096, "4096");
	ASSERT_OK(parse_size("64K", &v), "K");
	ASSERT_EQ(v, 65536, "64K");
	ASSERT_OK(parse_size("16m", &v), "m");
	ASSERT_EQ(v, 16 << 20, "16M");
	ASSERT_ERR(parse_size("", &v), "empty");
	ASSERT_ERR(parse_size("-1", &v), "negative");
	ASSERT_ERR(parse_size("12Q", &v), "bad suffix");
	ASSERT_ERR(parse_size("1KB", &v), "trailing junk");
	ASSERT_ERR(parse_size("99999999999999999999", &v), "overflow");
	ASSERT_ERR(parse_size("17179869184G", &v), "overflow with suffix");
}

static void test_errno_names(void)
{
	ASSERT_STREQ(errno_name(-ENOENT), "ENOENT", "ENOENT");
	ASSERT_STREQ(errno_name(EACCES), "EACCES", "EACCES");
	ASSERT_STREQ(errno_name(4000), "E4000", "unknown");
}

int main(void)
{
	RUN(test_decode_exec);
	RUN(test_decode_root_cwd);
	RUN(test_decode_cut_argv_at_boundary);
	RUN(test_decode_missing_args_flagged);
	RUN(test_decode_rejects_bad_lengths);
	RUN(test_format_json_exec);
	RUN(test_format_json_failed);
	RUN(test_format_text);
	RUN(test_parse_size_limits);
	RUN(test_errno_names);
	return UNIT_DONE();
}
