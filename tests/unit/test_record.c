// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Record decoding, event formatting and option limits, without a kernel. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/types.h>
#include "unit.h"
#include "execgate.h"
#include "events/format.h"
#include "events/output.h"
#include "util/json.h"
#include "trace/cgroups.h"
#include "trace/record.h"
#include "util/units.h"

/* The strings of a record, in the order the BPF side lays them out. */
struct strs {
	const char *fn; size_t fnlen;		/* exec: leaf first */
	const char *rq; size_t rqlen;
	const char *in; size_t inlen;
	const char *sc; size_t sclen;
};

static size_t mkrec2(char *buf, __u32 type, __u32 flags, const struct strs *st, const char *cwd,
		     size_t cwdlen, const char *argv, size_t argvlen, __u32 argc)
{
	struct eg_event h = {
		.type = type, .flags = flags, .pid = 42, .tid = 43, .ppid = 1, .uid = 1000,
		.gid = 1000, .euid = 1000, .egid = 1000, .auid = EG_AUID_UNSET, .depth = 2,
		.ktime_ns = 5000000000ull, .argc = argc,
		.argv_bytes = argvlen, .filename_len = st->fnlen, .requested_len = st->rqlen,
		.interp_len = st->inlen, .script_len = st->sclen, .cwd_len = cwdlen, .argv_len = argvlen,
		.parent_tgid = 41, .parent_ktime_ns = 4000000000ull, .cgroup_id = 7,
		.mnt_ns = 4026531840u, .pid_ns = 4026531836u, .ns_pid = 42,
		.dev = (8ull << 20) | 1, .ino = 1234,
	};
	size_t off = sizeof(h);

	strcpy(h.comm, "curl");
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + off, st->fn, st->fnlen);
	off += st->fnlen;
	memcpy(buf + off, st->rq, st->rqlen);
	off += st->rqlen;
	memcpy(buf + off, st->in, st->inlen);
	off += st->inlen;
	memcpy(buf + off, st->sc, st->sclen);
	off += st->sclen;
	memcpy(buf + off, cwd, cwdlen);
	off += cwdlen;
	memcpy(buf + off, argv, argvlen);
	return off + argvlen;
}

/* Builds a record with only a filename (leaf first for exec records). */
static size_t mkrec(char *buf, __u32 type, __u32 flags, const char *fn, size_t fnlen,
		    const char *cwd, size_t cwdlen, const char *argv, size_t argvlen, __u32 argc)
{
	struct strs st = { fn, fnlen, "", 0, "", 0, "", 0 };

	return mkrec2(buf, type, flags, &st, cwd, cwdlen, argv, argvlen, argc);
}

static const struct eg_format_ctx fc0 = { .boot_to_real = 0 };

static char rec[8192];

static void test_decode_exec(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	size_t n = mkrec(rec, EG_EVENT_EXEC, EG_F_PARENT_KNOWN, "curl\0bin\0usr\0", 13,
			 "b\0a\0", 4, "curl\0-X\0POST\0\0", 14, 4);

	if (!ASSERT_OK(record_decode(&d, rec, n, &r), "decode"))
		return;
	ASSERT_EQ(r.filename.len, 13, "filename rebuilt");
	ASSERT_MEMEQ(r.filename.p, "/usr/bin/curl", 13, "filename root first");
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
	size_t n = mkrec(rec, EG_EVENT_EXEC, 0, "true\0bin\0", 9, "", 0, "true\0", 5, 1);

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
	struct eg_annotation a = { .decision = "deny", .rule = "block-curl", .message = "no",
				   .action = "would-block" };
	struct strs st = { "curl\0bin\0usr\0", 13, "./curl", 7, "", 0, "", 0 };
	struct eg_format_ctx fc = { .boot_to_real = 1000000000, .host_mnt_ns = 4026531840u,
				    .host_pid_ns = 4026531836u };
	size_t n = mkrec2(rec, EG_EVENT_EXEC, EG_F_PARENT_KNOWN | EG_F_DEPTH_KNOWN, &st, "a\0", 2,
			  "curl\0a\nb\0\xff\0", 11, 3);
	const char *s;

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	format_record_json(&b, &r, &fc, &a);
	s = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(s, "{\"v\":1,\"type\":\"exec\",\"time\":\"1970-01-01T00:00:06.000000000Z\"") == s,
		    "prefix and time (boot 5s + offset 1s)");
	ASSERT_TRUE(strstr(s, "\"exec_id\":\"42:5000000000\",\"parent_exec_id\":\"41:4000000000\"") != NULL, "ids");
	ASSERT_TRUE(strstr(s, "\"argv\":[\"curl\",\"a\\nb\",\"\\udcff\"],\"argc\":3") != NULL, "argv");
	ASSERT_TRUE(strstr(s, "\"cwd\":\"/a\"") != NULL, "cwd");
	ASSERT_TRUE(strstr(s, "\"depth\":2,\"depth_known\":true,\"session_depth\":null,\"context\":null,\"session\":null,\"cgroup_id\":7") != NULL, "depth");
	ASSERT_TRUE(strstr(s, "\"filename\":\"/usr/bin/curl\",\"path_requested\":\"./curl\"") != NULL,
		    "resolved file and spelling");
	ASSERT_TRUE(strstr(s, "\"uid\":1000,\"euid\":1000,\"gid\":1000,\"egid\":1000,\"auid\":null,\"tty\":null,"
			   "\"secureexec\":false") != NULL, "credentials");
	ASSERT_TRUE(strstr(s, "\"dev\":\"8:1\",\"ino\":1234") != NULL, "identity");
	ASSERT_TRUE(strstr(s, "ns_pid") == NULL && strstr(s, "foreign_ns") == NULL, "host namespaces say nothing");
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
	format_record_json(&b, &r, &fc0, NULL);
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
	size_t n = mkrec(rec, EG_EVENT_EXEC, 0, "echo\0bin\0", 9, "", 0, "echo\0hello world\0it's\0\x01\0", 24, 4);
	const char *s;

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	format_record_text(&b, &r, &fc0, NULL);
	s = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(s, " 42 ") != NULL, "pid");
	ASSERT_TRUE(strstr(s, "echo 'hello world' 'it'\\''s' \\x01\n") != NULL, "shell quoting and escapes");
	sbuf_free(&b);
	decoder_free(&d);
}

/* Valid UTF-8 goes whole; only bytes that are no part of one, and controls, are escaped. */
static void test_format_text_utf8(void)
{
	static const char argv[] = "echo\0caf\xc3\xa9\0\xe2\x82\xac\xff\0\xc3\0\xc2\x85\0\xf0\x9f\x99\x82\0";
	struct eg_decoder d = {};
	struct eg_record r;
	struct sbuf b = {};
	size_t n = mkrec(rec, EG_EVENT_EXEC, 0, "echo\0bin\0", 9, "", 0, argv, sizeof(argv) - 1, 6);
	const char *s;

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	format_record_text(&b, &r, &fc0, NULL);
	s = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(s, " echo caf\xc3\xa9 \xe2\x82\xac\\xff \\xc3 \\xc2\\x85 \xf0\x9f\x99\x82\n") != NULL,
		    "UTF-8 as it is, stray, truncated and C1 bytes escaped");
	sbuf_free(&b);
	decoder_free(&d);
}

static void test_decode_script_deleted_anon(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	struct sbuf b = {};
	struct strs st = { "dash\0bin\0usr\0", 13, "./cat", 6, "/bin/sh", 8, "cat\0tmp\0", 8 };
	struct eg_format_ctx fc = { .host_mnt_ns = 1, .host_pid_ns = 2 };
	size_t n = mkrec2(rec, EG_EVENT_EXEC, EG_F_SCRIPT | EG_F_SCRIPT_FOUND | EG_F_SCRIPT_DELETED |
			  EG_F_SECUREEXEC, &st, "", 0, "/bin/sh\0./cat\0x\0", 17, 3);
	const char *s;

	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	ASSERT_MEMEQ(r.script.p, "/tmp/cat (deleted)", 18, "script rebuilt, deleted marked");
	format_record_json(&b, &r, &fc, NULL);
	s = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(s, "\"filename\":\"/tmp/cat (deleted)\",\"path_requested\":\"./cat\","
			   "\"interpreter\":\"/usr/bin/dash\",\"interpreter_requested\":\"/bin/sh\"") != NULL,
		    "a script: itself, then its interpreter");
	ASSERT_TRUE(strstr(s, "\"secureexec\":true") != NULL, "secureexec");
	ASSERT_TRUE(strstr(s, "\"ns_pid\"") == NULL, "same pid");
	ASSERT_TRUE(strstr(s, "\"foreign_ns\":true") != NULL, "another namespace than the daemon's");
	sbuf_free(&b);

	/* a memfd run by fd: its name as is, and said to be anonymous and by fd */
	st = (struct strs){ "memfd:payload", 14, "/dev/fd/3", 10, "", 0, "", 0 };
	n = mkrec2(rec, EG_EVENT_EXEC, EG_F_ANON_FILE, &st, "", 0, "x\0", 2, 1);
	ASSERT_OK(record_decode(&d, rec, n, &r), "decode anon");
	format_record_json(&b, &r, &fc0, NULL);
	s = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(s, "\"filename\":\"memfd:payload\",\"path_requested\":\"/dev/fd/3\"") != NULL, "memfd");
	ASSERT_TRUE(strstr(s, "\"file_kind\":\"anonymous\"") != NULL, "anonymous");
	ASSERT_TRUE(strstr(s, "\"exec_fd\":true") != NULL, "by fd");
	sbuf_free(&b);

	/* a deleted file and cwd keep their markers */
	st = (struct strs){ "evil\0tmp\0", 9, "/tmp/evil", 10, "", 0, "", 0 };
	n = mkrec2(rec, EG_EVENT_EXEC, EG_F_FILE_DELETED | EG_F_CWD_DELETED, &st, "gone\0", 5, "x\0", 2, 1);
	ASSERT_OK(record_decode(&d, rec, n, &r), "decode deleted");
	ASSERT_MEMEQ(r.filename.p, "/tmp/evil (deleted)", 19, "deleted file");
	ASSERT_MEMEQ(r.cwd.p, "/gone (deleted)", 15, "deleted cwd");
	decoder_free(&d);
}

static void test_text_does_not_wrap(void)
{
	struct eg_decoder d = {};
	struct eg_record r;
	struct sbuf b = {};
	struct eg_format_ctx fc = { .width = 80 };
	char argv[600];
	size_t n, i;
	const char *s;

	for (i = 0; i < 599; i++)
		argv[i] = i % 10 == 9 ? '\0' : 'a';
	argv[599] = '\0';
	n = mkrec(rec, EG_EVENT_EXEC, 0, "echo\0bin\0", 9, "", 0, argv, 600, 60);
	ASSERT_OK(record_decode(&d, rec, n, &r), "decode");
	format_record_text(&b, &r, &fc, NULL);
	s = sbuf_cstr(&b);
	ASSERT_EQ(strlen(s), 81, "80 columns and the newline");
	ASSERT_EQ(s[79], '+', "cut marker");
	ASSERT_TRUE(strstr(s, "/bin/echo") != NULL, "resolved binary column");
	ASSERT_TRUE(s[4] == '-' && s[7] == '-' && s[10] == ' ', "a date");
	sbuf_free(&b);
	decoder_free(&d);
}

static void test_container_names(void)
{
	struct eg_container c;

	ASSERT_OK(cgroup_container("/libpod_parent/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				   &c), "podman cgroupfs");
	ASSERT_STREQ(c.runtime, "podman", "podman");
	ASSERT_EQ(strlen(c.id), 64, "full id");
	ASSERT_OK(cgroup_container("/system.slice/docker-abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope",
				   &c), "docker systemd");
	ASSERT_STREQ(c.runtime, "docker", "docker");
	ASSERT_TRUE(!strncmp(c.id, "abcdef01", 8), "id without .scope");
	ASSERT_OK(cgroup_container("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_1111_2222_3333_444455556666.slice/"
				   "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope", &c),
		  "kubernetes containerd");
	ASSERT_STREQ(c.runtime, "containerd", "containerd");
	ASSERT_STREQ(c.pod_uid, "1a2b3c4d-1111-2222-3333-444455556666", "pod uid");
	ASSERT_OK(cgroup_container("/machine.slice/crio-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
				   &c), "crio");
	ASSERT_STREQ(c.runtime, "crio", "crio");
	ASSERT_ERR(cgroup_container("/libpod_parent/libpod-conmon-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				    &c), "conmon is not the container");
	ASSERT_TRUE(!c.user, "a system container is not a user's");
	ASSERT_ERR(cgroup_container("/user.slice/user-1000.slice/session-3.scope", &c), "a login session");
	/* below a user's delegated subtree any name is the user's: no system runtime's state, no pod */
	ASSERT_OK(cgroup_container("/user.slice/user-1000.slice/user@1000.service/kubepods/pod1a2b3c4d_1111_2222_3333_444455556666/"
				   "docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope", &c),
		  "a user's cgroup named like a container");
	ASSERT_TRUE(c.user, "the user's");
	ASSERT_STREQ(c.pod_uid, "", "no pod uid from a user's names");
	/* a real container whose processes run a user's session below it stays the container */
	ASSERT_OK(cgroup_container("/system.slice/docker-abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope/"
				   "user.slice/user@1000.service/app.slice", &c), "a container running a user manager");
	ASSERT_TRUE(!c.user, "the container's, not the user's");
	/* a container's processes in a cgroup below its own (podman's .../container): still the container */
	ASSERT_OK(cgroup_container("/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope/"
				   "container", &c), "podman's container leaf");
	ASSERT_TRUE(!c.user, "the container's own");
	/* below a container's cgroup, names are its choice: another container's id is not believed */
	ASSERT_OK(cgroup_container("/system.slice/docker-abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope/"
				   "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
				   &c), "a container that named a cgroup of its own after another");
	ASSERT_STREQ(c.runtime, "containerd", "as it names itself");
	ASSERT_TRUE(c.user, "nothing read from the host's runtimes about it");
	ASSERT_STREQ(c.pod_uid, "", "no pod");
	ASSERT_ERR(cgroup_container("/lxc.payload.*", &c), "an LXC name with a glob's characters");
	ASSERT_OK(cgroup_container("/lxc.payload.web-1", &c), "an LXC name");
	ASSERT_STREQ(c.id, "web-1", "lxc id");
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

static void put_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(s, f);
		fclose(f);
	}
}

static struct rlimit fsize_was;

/* The file size limit at n bytes: a write past them fails (EFBIG), as on a full disk. */
static void fsize_limit(rlim_t n)
{
	struct rlimit rl = fsize_was;

	rl.rlim_cur = n;
	setrlimit(RLIMIT_FSIZE, &rl);
}

static bool rotated_cut, rotated_said;

static void on_rotated(struct eg_output *o, const char *prev, void *arg)
{
	(void)arg;
	setrlimit(RLIMIT_FSIZE, &fsize_was);
	rotated_cut = !prev && output_ended_cut_line(o);
	rotated_said = !prev && output_cut_line_error(o) != NULL;
}

/*
 * A cut last line that cannot be ended (the disk full): the open goes on (a
 * handover must), the failed write counted and said; the same when a
 * rotation finds the file replaced by one with a cut line.
 */
static void test_output_cut_line_on_a_full_disk(void)
{
	char dir[] = "/tmp/execgate-output-test-XXXXXX", path[64], err[256];
	struct eg_output_opts opts = { .gid = (gid_t)-1 };
	struct eg_output *o = NULL;
	struct stat st;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir"))
		return;
	getrlimit(RLIMIT_FSIZE, &fsize_was);
	signal(SIGXFSZ, SIG_IGN);
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	opts.path = path;
	put_file(path, "{\"v\":1,\"cut");
	fsize_limit(11);
	if (ASSERT_OK(output_open(&opts, &o, err, sizeof(err)), err)) {
		setrlimit(RLIMIT_FSIZE, &fsize_was);
		ASSERT_EQ(output_stats(o)->write_errors, 1, "the failed '\\n' counted");
		ASSERT_FALSE(output_ended_cut_line(o), "not ended");
		ASSERT_TRUE(output_cut_line_error(o) && strstr(output_cut_line_error(o), "cannot end the cut last line"),
			    "said");
		sbuf_puts(output_buf(o), "{\"v\":1}\n");
		output_end(o, EG_REC_META);
		ASSERT_OK(output_flush(o), "a record after it");
		ASSERT_TRUE(!stat(path, &st) && st.st_size == 11 + 8, "the file's bytes");
		output_close(o);
		o = NULL;
	}
	setrlimit(RLIMIT_FSIZE, &fsize_was);
	/* a rotation that finds the file replaced by one with a cut line it cannot end */
	unlink(path);
	opts.max_size = 16;
	opts.keep = 2;
	if (ASSERT_OK(output_open(&opts, &o, err, sizeof(err)), err)) {
		output_set_rotate_cb(o, on_rotated, NULL);
		sbuf_puts(output_buf(o), "{\"v\":1,\"pad\":\"0123456789\"}\n");
		output_end(o, EG_REC_META);
		ASSERT_OK(output_flush(o), "the first record");
		unlink(path);
		put_file(path, "{\"cut");
		fsize_limit(5);
		sbuf_puts(output_buf(o), "{\"v\":1}\n");
		output_end(o, EG_REC_META);
		output_flush(o);
		setrlimit(RLIMIT_FSIZE, &fsize_was);
		ASSERT_TRUE(rotated_said && !rotated_cut, "the new file taken, the cut line said");
		ASSERT_EQ(output_stats(o)->write_errors, 1, "counted");
		ASSERT_TRUE(!stat(path, &st) && st.st_size == 5 + 8, "the record in the new file");
		output_close(o);
	}
	/* and ended when it can be: the rotated record says so */
	unlink(path);
	o = NULL;
	if (ASSERT_OK(output_open(&opts, &o, err, sizeof(err)), err)) {
		output_set_rotate_cb(o, on_rotated, NULL);
		sbuf_puts(output_buf(o), "{\"v\":1,\"pad\":\"0123456789\"}\n");
		output_end(o, EG_REC_META);
		output_flush(o);
		unlink(path);
		put_file(path, "{\"cut");
		sbuf_puts(output_buf(o), "{\"v\":1}\n");
		output_end(o, EG_REC_META);
		output_flush(o);
		ASSERT_TRUE(rotated_cut && !rotated_said, "ended");
		ASSERT_TRUE(!stat(path, &st) && st.st_size == 5 + 1 + 8, "the '\\n', then the record");
		output_close(o);
	}
	{
		char cmd[96];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		ASSERT_OK(system(cmd), "the files removed");
	}
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
	RUN(test_format_text_utf8);
	RUN(test_decode_script_deleted_anon);
	RUN(test_text_does_not_wrap);
	RUN(test_container_names);
	RUN(test_parse_size_limits);
	RUN(test_errno_names);
	RUN(test_output_cut_line_on_a_full_disk);
	return UNIT_DONE();
}
