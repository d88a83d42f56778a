// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate query's pieces: time parsing, the raw-byte prefilter against the full match, the tree, the cache of recent execs, the sinks' datagrams. */
#include "unit.h"
#include <jansson.h>
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "events/lineage.h"
#include "events/sinks.h"
#include "query/generate.h"
#include "query/query.h"
#include "util/json.h"
#include "util/severity.h"

#define NOW 1768833000000000000ull	/* 2026-01-19T14:30:00Z */

static void test_parse_time(void)
{
	char t[32];

	ASSERT_OK(query_parse_time("2026-01-19T14:30:00Z", NOW, t), "iso utc");
	ASSERT_STREQ(t, "2026-01-19T14:30:00.000000000Z", "iso utc");
	ASSERT_OK(query_parse_time("2026-01-19T14:30:00.25Z", NOW, t), "fraction");
	ASSERT_STREQ(t, "2026-01-19T14:30:00.250000000Z", "fraction");
	ASSERT_OK(query_parse_time("1h", NOW, t), "1h");
	ASSERT_STREQ(t, "2026-01-19T13:30:00.000000000Z", "1h ago");
	ASSERT_OK(query_parse_time("2d", NOW, t), "2d");
	ASSERT_STREQ(t, "2026-01-17T14:30:00.000000000Z", "2d ago");
	setenv("TZ", "UTC", 1);
	tzset();
	ASSERT_OK(query_parse_time("yesterday", NOW, t), "yesterday");
	ASSERT_STREQ(t, "2026-01-18T00:00:00.000000000Z", "yesterday's midnight");
	ASSERT_OK(query_parse_time("today", NOW, t), "today");
	ASSERT_STREQ(t, "2026-01-19T00:00:00.000000000Z", "today's midnight");
	ASSERT_OK(query_parse_time("2026-01-19 10:00", NOW, t), "local, no seconds");
	ASSERT_STREQ(t, "2026-01-19T10:00:00.000000000Z", "local in UTC");
	ASSERT_EQ(query_parse_time("soon", NOW, t), -EINVAL, "nonsense");
	ASSERT_EQ(query_parse_time("5x", NOW, t), -EINVAL, "unknown unit");
	ASSERT_EQ(query_parse_time("2026-01-19T14:30:00+junk", NOW, t), -EINVAL, "trailing junk");
}

static const char *const lines[] = {
	"{\"v\":1,\"type\":\"exec\",\"time\":\"2026-01-19T14:00:00.000000001Z\",\"exec_id\":\"10:1\",\"parent_exec_id\":null,\"pid\":10,\"uid\":1000,\"euid\":0,\"comm\":\"bash\",\"filename\":\"/usr/bin/bash\",\"argv\":[\"bash\"],\"session\":\"s-1\",\"decision\":\"allow\",\"rule\":null,\"action\":\"allowed\"}",
	"{\"v\":1,\"type\":\"exec\",\"time\":\"2026-01-19T14:00:01.000000000Z\",\"exec_id\":\"11:2\",\"parent_exec_id\":\"10:1\",\"pid\":11,\"uid\":1000,\"euid\":1000,\"comm\":\"curl\",\"filename\":\"/usr/bin/curl\",\"argv\":[\"curl\",\"-s\",\"x\\udcff\"],\"session\":\"s-1\",\"decision\":\"deny\",\"rule\":\"no-curl\",\"action\":\"blocked\",\"severity\":\"high\",\"container\":{\"id\":\"0123456789abcdef0123\",\"runtime\":\"podman\",\"name\":\"web\",\"image\":null},\"pod\":{\"name\":\"shop\",\"namespace\":null,\"uid\":null}}",
	"{\"v\":1,\"type\":\"exec\",\"time\":\"2026-01-19T14:00:02.000000000Z\",\"exec_id\":\"12:3\",\"parent_exec_id\":\"10:1\",\"pid\":12,\"uid\":0,\"euid\":0,\"comm\":\"make\",\"filename\":\"/usr/bin/make\",\"argv\":[\"make\"],\"session\":\"s-1\",\"decision\":\"allow\",\"rule\":\"build\",\"action\":\"allowed\"}",
	"{\"v\":1,\"type\":\"exec\",\"time\":\"2026-01-19T14:00:03.000000000Z\",\"exec_id\":\"13:4\",\"parent_exec_id\":\"12:3\",\"pid\":13,\"uid\":0,\"euid\":0,\"comm\":\"cc\",\"filename\":\"/usr/bin/gcc-12\",\"argv\":[\"cc\",\"-c\",\"a.c\"],\"session\":\"s-1\",\"decision\":\"allow\",\"rule\":\"build\",\"action\":\"allowed\"}",
	"{\"v\":1,\"type\":\"exit\",\"time\":\"2026-01-19T14:00:04.000000000Z\",\"exec_id\":\"13:4\",\"pid\":13,\"uid\":0,\"comm\":\"cc\",\"filename\":\"/usr/bin/gcc-12\",\"exit_code\":1,\"signal\":null,\"duration_ns\":1000000000,\"session\":\"s-1\"}",
	"{\"v\":1,\"type\":\"exit\",\"time\":\"2026-01-19T14:00:05.000000000Z\",\"exec_id\":\"12:3\",\"pid\":12,\"uid\":0,\"comm\":\"make\",\"filename\":\"/usr/bin/make\",\"exit_code\":null,\"signal\":\"SIGKILL\",\"duration_ns\":3000000000,\"session\":\"s-1\"}",
	"{\"v\":1,\"type\":\"daemon\",\"time\":\"2026-01-19T14:00:06.000000000Z\",\"event\":\"stop\"}",
};
#define NLINES (sizeof(lines) / sizeof(lines[0]))

/* The prefilter may let a line through that the match refuses, never the other way */
static unsigned int count(struct query_filter *f, unsigned int *ret_pre)
{
	unsigned int n = 0, pre = 0;
	size_t i;

	query_filter_ready(f);
	for (i = 0; i < NLINES; i++) {
		json_t *r = json_load_record(lines[i], strlen(lines[i]));
		bool p = query_prefilter(f, lines[i], strlen(lines[i])), m;

		ASSERT_TRUE(r != NULL, lines[i]);
		m = r && query_match(f, r);
		if (m && !p)
			ASSERT_TRUE(false, "the prefilter refused a matching line");
		pre += p;
		n += m;
		json_decref(r);
	}
	if (ret_pre)
		*ret_pre = pre;
	return n;
}

static void test_filters(void)
{
	struct query_filter f;
	unsigned int pre;

	memset(&f, 0, sizeof(f));
	ASSERT_EQ(count(&f, NULL), NLINES, "no filter");
	memset(&f, 0, sizeof(f));
	f.decisions[f.n_decisions++] = "deny";
	ASSERT_EQ(count(&f, &pre), 1, "--decision deny");
	ASSERT_EQ(pre, 1, "... rejected on the bytes");
	memset(&f, 0, sizeof(f));
	f.uids[f.n_uids++] = 1000;
	ASSERT_EQ(count(&f, &pre), 2, "--user 1000 (uid, not euid)");
	memset(&f, 0, sizeof(f));
	f.types[f.n_types++] = "exec";
	ASSERT_EQ(count(&f, &pre), 4, "--type exec (not exec_failed, not exit)");
	memset(&f, 0, sizeof(f));
	f.comm[f.n_comm++] = "c*";
	ASSERT_EQ(count(&f, NULL), 3, "--comm 'c*'");
	memset(&f, 0, sizeof(f));
	f.filename[f.n_filename++] = "/usr/bin/gcc*";
	ASSERT_EQ(count(&f, NULL), 2, "--filename (exec and exit)");
	memset(&f, 0, sizeof(f));
	f.containers[f.n_containers++] = "web";
	ASSERT_EQ(count(&f, NULL), 1, "--container by name");
	memset(&f, 0, sizeof(f));
	f.containers[f.n_containers++] = "0123456789ab";
	ASSERT_EQ(count(&f, NULL), 1, "--container by a prefix of the id");
	memset(&f, 0, sizeof(f));
	f.containers[f.n_containers++] = "01234";
	ASSERT_EQ(count(&f, NULL), 0, "--container: too short a prefix");
	memset(&f, 0, sizeof(f));
	f.pods[f.n_pods++] = "shop";
	ASSERT_EQ(count(&f, NULL), 1, "--pod");
	memset(&f, 0, sizeof(f));
	f.min_severity = EG_SEV_MEDIUM;
	ASSERT_EQ(count(&f, &pre), 1, "--min-severity medium");
	ASSERT_EQ(pre, 1, "... on the bytes");
	memset(&f, 0, sizeof(f));
	ASSERT_OK(query_parse_time("2026-01-19T14:00:02Z", NOW, f.since), "since");
	ASSERT_OK(query_parse_time("2026-01-19T14:00:05Z", NOW, f.until), "until");
	ASSERT_EQ(count(&f, &pre), 3, "--since/--until: [since, until)");
	ASSERT_EQ(pre, 3, "... by comparing the time's bytes");
	memset(&f, 0, sizeof(f));
	f.sessions[f.n_sessions++] = "s-1";
	f.rules[f.n_rules++] = "build";
	f.rules[f.n_rules++] = "no-curl";
	ASSERT_EQ(count(&f, NULL), 3, "alternatives within a kind, all kinds must hold");
}

static void test_tree(void)
{
	struct query_tree *t = query_tree_new();
	struct sbuf b = {};
	size_t i;

	for (i = 0; i < NLINES; i++) {
		json_t *r = json_load_record(lines[i], strlen(lines[i]));

		query_tree_add(t, r);
		json_decref(r);
	}
	ASSERT_OK(query_tree_print(t, "13:4", &b, 0, false), "tree of an exec");
	/* its ancestors first, then it, with its exit */
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "bash") < strstr(sbuf_cstr(&b), "make"), sbuf_cstr(&b));
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "cc -c a.c  [exit 1 after 1.000s]") != NULL, sbuf_cstr(&b));
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "curl") == NULL, "a sibling is no ancestor");
	sbuf_reset(&b);
	ASSERT_OK(query_tree_print(t, "s-1", &b, 0, false), "tree of a session");
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "!") != NULL, "the denied exec stands out");
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "killed by SIGKILL") != NULL, sbuf_cstr(&b));
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "└─ cc -c a.c") != NULL, sbuf_cstr(&b));
	sbuf_reset(&b);
	ASSERT_EQ(query_tree_print(t, "99:9", &b, 0, false), -ENOENT, "unknown root");
	sbuf_free(&b);
	query_tree_free(t);
}

static void test_text(void)
{
	json_t *r = json_load_record(lines[1], strlen(lines[1]));
	struct sbuf b = {};

	query_text(&b, r, 0);
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "deny     blocked     curl -s x\xef\xbf\xbd") != NULL, sbuf_cstr(&b));
	sbuf_reset(&b);
	query_text(&b, r, 50);
	ASSERT_EQ(strlen(sbuf_cstr(&b)), 51, "cut to the width, with its '+' and newline");
	json_decref(r);
	sbuf_free(&b);
}

/* No byte a terminal acts on: C0 controls but the line's '\n', DEL, and C1 controls in UTF-8 (c2 80..9f). */
static bool terminal_safe(const struct sbuf *b)
{
	size_t i;

	for (i = 0; i < b->len; i++) {
		unsigned char c = b->data[i];

		if ((c < 0x20 && !(c == '\n' && i == b->len - 1)) || c == 0x7f ||
		    (c == 0xc2 && i + 1 < b->len && (unsigned char)b->data[i + 1] < 0xa0))
			return false;
	}
	return true;
}

/* Whatever a record's strings hold, the text view and the tree write no escape sequence. */
static void test_text_escapes(void)
{
	static const char *const recs[] = {
		/* an exit's file name and comm (the comm: an exit of no file name) */
		"{\"v\":1,\"type\":\"exit\",\"time\":\"2026-01-19T14:00:03.000000000Z\",\"exec_id\":\"11:2\",\"pid\":11,"
		"\"filename\":\"/tmp/\\u001b]0;pwned\\u0007x\",\"comm\":\"c\",\"exit_code\":0,\"signal\":null,\"duration_ns\":1}",
		"{\"v\":1,\"type\":\"exit\",\"time\":\"2026-01-19T14:00:03.000000000Z\",\"exec_id\":\"11:2\",\"pid\":11,"
		"\"filename\":null,\"comm\":\"\\u009b2J\\u001b[1m\",\"exit_code\":null,\"signal\":\"\\u001b[2J\",\"duration_ns\":1}",
		/* U+009B (CSI) in an argument, U+0085 (NEL) in an error, ESC in the time and the decision */
		"{\"v\":1,\"type\":\"exec\",\"time\":\"2026-01-19T14:00:01.000000000Z\",\"exec_id\":\"11:2\",\"pid\":11,"
		"\"uid\":0,\"argv\":[\"echo\",\"\\u009b31mred\"],\"decision\":\"allow\\u001b[2J\"}",
		"{\"v\":1,\"type\":\"exec_failed\",\"time\":\"\\u001b[2J\",\"pid\":11,\"uid\":0,\"argv\":[\"x\"],"
		"\"error\":\"E\\u0085\\u001b[2J\",\"action\":\"\\u009b0m\"}",
		"{\"v\":1,\"type\":\"daemon\\u001b[2J\",\"time\":\"2026-01-19T14:00:01.000000000Z\",\"event\":\"\\u009bstart\"}",
	};
	struct sbuf b = {};
	unsigned int i;

	for (i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		json_t *r = json_load_record(recs[i], strlen(recs[i]));

		if (!ASSERT_TRUE(r != NULL, recs[i]))
			continue;
		sbuf_reset(&b);
		query_text(&b, r, 0);
		/* the record's JSON as the message: the view's bytes would act on the terminal */
		ASSERT_TRUE(terminal_safe(&b), recs[i]);
		json_decref(r);
	}
	{
		struct query_tree *t = query_tree_new();
		json_t *r = json_load_record(recs[2], strlen(recs[2]));

		sbuf_reset(&b);
		query_text(&b, r, 0);
		ASSERT_TRUE(strstr(sbuf_cstr(&b), "echo \\xc2\\x9b31mred") != NULL, "C1 as \\xNN, as the daemon's table");
		query_tree_add(t, r);
		json_decref(r);
		r = json_load_record(recs[1], strlen(recs[1]));
		query_tree_add(t, r);
		json_decref(r);
		sbuf_reset(&b);
		ASSERT_OK(query_tree_print(t, "11:2", &b, 0, false), "the tree");
		ASSERT_TRUE(terminal_safe(&b), "the tree's lines");
		query_tree_free(t);
		sbuf_reset(&b);
		r = json_load_record(recs[0], strlen(recs[0]));
		query_text(&b, r, 0);
		ASSERT_TRUE(terminal_safe(&b) && strstr(sbuf_cstr(&b), "] '/tmp/\\x1b]0;pwned\\x07x'") != NULL,
			    "an exit's file name as an exec's");
		json_decref(r);
	}
	sbuf_free(&b);
}

/* An exec of sh with that id and parent into the tree. */
static void tree_add_sh(struct query_tree *t, const char *id, const char *parent)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:[s]}", "type", "exec", "time", "2026-01-19T14:00:00.000000000Z",
			      "exec_id", id, "parent_exec_id", parent, "argv", "sh");

	query_tree_add(t, r);
	json_decref(r);
}

/* A chain of 100,000 execs, and parent links that loop (a file made up): drawn, bounded, with a marker. */
static void test_tree_deep(void)
{
	struct query_tree *t = query_tree_new();
	struct sbuf b = {};
	char id[32], parent[32];
	unsigned int i, lines = 0;
	size_t k;

	for (i = 1; i <= 100000; i++) {
		snprintf(id, sizeof(id), "%u:1", i);
		snprintf(parent, sizeof(parent), "%u:1", i - 1);
		tree_add_sh(t, id, parent);
	}
	ASSERT_OK(query_tree_print(t, "1:1", &b, 0, false), "the tree of the chain's first exec");
	for (k = 0; k < b.len; k++)
		lines += b.data[k] == '\n';
	ASSERT_TRUE(lines > 100 && lines < 1000, "a bounded drawing");
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "deeper than 200 levels: --tree 201:1 draws them") != NULL,
		    "the marker names where to go on");
	query_tree_free(t);
	/* 2 and 3 each the other's parent */
	t = query_tree_new();
	for (i = 1; i <= 3; i++) {
		snprintf(id, sizeof(id), "%u:1", i);
		snprintf(parent, sizeof(parent), "%u:1", i == 1 ? 0 : i == 2 ? 3 : 2);
		tree_add_sh(t, id, parent);
	}
	sbuf_reset(&b);
	ASSERT_OK(query_tree_print(t, "2:1", &b, 0, false), "a loop of parents");
	ASSERT_TRUE(strstr(sbuf_cstr(&b), "deeper than 200 levels") != NULL, "ends");
	query_tree_free(t);
	sbuf_free(&b);
}

/* The marker below 200 levels names the exec that goes on: its id is the record's, escaped as the rest. */
static void test_tree_marker_escapes(void)
{
	struct query_tree *t = query_tree_new();
	struct sbuf b = {};
	char id[32], parent[32];
	const char *want = "'201:\\x1b]0;x\\x07\\xc2\\x9b2J' draws them\n", *m;
	unsigned int i;

	for (i = 1; i <= 202; i++) {
		snprintf(id, sizeof(id), i == 201 ? "%u:\x1b]0;x\x07\xc2\x9b" "2J" : "%u:1", i);
		snprintf(parent, sizeof(parent), i == 202 ? "%u:\x1b]0;x\x07\xc2\x9b" "2J" : "%u:1", i - 1);
		tree_add_sh(t, id, parent);
	}
	ASSERT_OK(query_tree_print(t, "1:1", &b, 0, false), "the tree");
	m = strstr(sbuf_cstr(&b), "deeper than 200 levels: --tree ");
	ASSERT_TRUE(m && !strncmp(m + 31, want, strlen(want)), m ? m : "no marker");
	for (i = 0; m && m[i] != '\n'; i++)
		if (!ASSERT_TRUE((unsigned char)m[i] >= 0x20 && m[i] != 0x7f && !((unsigned char)m[i] == 0xc2 &&
				 (unsigned char)m[i + 1] < 0xa0), "no control byte in the marker"))
			break;
	query_tree_free(t);
	sbuf_free(&b);
}

static void test_lineage_bounded(void)
{
	struct eg_lineage *l = lineage_new(4, 1 << 20);
	const struct eg_lineage_entry *e;
	char comm[16] = "sh";
	uint32_t i;

	for (i = 1; i <= 6; i++)
		lineage_add(l, i, i * 100, "/bin/sh", 7, comm, i == 6 ? EG_SEV_HIGH : 0);
	ASSERT_EQ(lineage_count(l), 4, "bounded");
	ASSERT_TRUE(lineage_get(l, 1, 100) == NULL, "the oldest forgotten");
	e = lineage_get(l, 6, 600);
	ASSERT_TRUE(e && !strcmp(e->filename, "/bin/sh") && e->severity == EG_SEV_HIGH, "the newest kept");
	ASSERT_TRUE(lineage_get(l, 6, 601) == NULL, "the id is pid and time");
	lineage_free(l);
	l = lineage_new(100, 16);
	lineage_add(l, 1, 1, "/0123456789", 11, comm, 0);
	lineage_add(l, 2, 2, "/0123456789", 11, comm, 0);
	ASSERT_TRUE(!lineage_get(l, 1, 1) && lineage_get(l, 2, 2), "bounded in bytes too");
	lineage_free(l);
	/* names kept in the entry and names allocated, mixed, through many evictions */
	l = lineage_new(8, 1 << 20);
	for (i = 1; i <= 100; i++) {
		char name[300];
		size_t n = (i * 37) % sizeof(name);

		memset(name, 'a' + i % 26, n);
		lineage_add(l, i, i, name, n, comm, 0);
		for (uint32_t j = i > 8 ? i - 7 : 1; j <= i; j++) {
			size_t m = (j * 37) % sizeof(name);

			e = lineage_get(l, j, j);
			ASSERT_TRUE(e && e->filename_len == m && strlen(e->filename) == m &&
				    (!m || (e->filename[0] == (char)('a' + j % 26) && e->filename[m - 1] == (char)('a' + j % 26))),
				    "each kept name is its own, whatever its length");
		}
		ASSERT_TRUE(i <= 8 || !lineage_get(l, i - 8, i - 8), "the ninth oldest is gone");
	}
	lineage_free(l);
}

static void test_syslog_datagram(void)
{
	struct sbuf b = {};

	sink_format_syslog(&b, lines[1], strlen(lines[1]), EG_SEV_HIGH, "web1", 42);
	/* authpriv (10) * 8 + err (3): high; microseconds; the record unchanged */
	ASSERT_TRUE(!strncmp(sbuf_cstr(&b), "<83>1 2026-01-19T14:00:01.000000Z web1 execgate 42 exec - {", 59),
		    sbuf_cstr(&b));
	ASSERT_TRUE(strstr(sbuf_cstr(&b), lines[1]) != NULL, "the JSON record as the message");
	sbuf_reset(&b);
	sink_format_syslog(&b, lines[0], strlen(lines[0]), 0, "web1", 42);
	ASSERT_TRUE(!strncmp(sbuf_cstr(&b), "<86>1 ", 6), "an allowed exec is info");
	ASSERT_EQ(sink_syslog_severity(lines[1], strlen(lines[1]), 0), 4, "a denied exec of no severity: warning");
	sbuf_free(&b);
}

/* A record longer than syslog takes: argv cut in order, never inside an escape or a UTF-8 sequence. */
static void test_syslog_cut(void)
{
	struct sbuf rec = {}, out = {};
	json_error_t err;
	json_t *j, *argv;
	size_t i, max;
	int rc;

	sbuf_puts(&rec, "{\"v\":1,\"type\":\"exec\",\"time\":\"2026-01-19T14:00:01.000000000Z\",\"argv\":[\"/bin/x\",\"");
	for (i = 0; i < 3000; i++)
		sbuf_puts(&rec, i % 3 == 0 ? "\\u00ff" : i % 3 == 1 ? "\xc3\xa9" : "\\\"");
	sbuf_puts(&rec, "\",\"last\"],\"decision\":\"deny\",\"action\":\"killed\"}");
	for (max = 300; max < 5000; max += 97) {
		sbuf_reset(&out);
		rc = sink_cut_argv(&out, rec.data, rec.len, max);
		if (!ASSERT_OK(rc, "cut"))
			break;
		if (!ASSERT_TRUE(out.len <= max, "fits"))
			printf("    %zu > %zu\n", out.len, max);
		j = json_loadb(out.data, out.len, JSON_ALLOW_NUL, &err);
		if (!ASSERT_TRUE(j != NULL, "still JSON"))
			printf("    max %zu: %s\n%.*s\n", max, err.text, (int)out.len, out.data);
		if (!j)
			break;
		argv = json_object_get(j, "argv");
		ASSERT_STREQ(json_string_value(json_array_get(argv, 0)), "/bin/x", "argv[0] kept");
		ASSERT_EQ(json_integer_value(json_object_get(json_object_get(j, "syslog_cut"), "bytes")), (long long)rec.len,
			  "the record's length");
		ASSERT_EQ(json_integer_value(json_object_get(json_object_get(j, "syslog_cut"), "argc")), 3, "argc");
		ASSERT_EQ(json_integer_value(json_object_get(json_object_get(j, "syslog_cut"), "argv_kept")),
			  (long long)json_array_size(argv), "argv_kept");
		ASSERT_STREQ(json_string_value(json_object_get(j, "action")), "killed", "the rest of the record");
		json_decref(j);
	}
	ASSERT_EQ(sink_cut_argv(&out, rec.data, rec.len, 100), -E2BIG, "no room even for an empty argv");
	/* many short arguments: only the array's insides count against the room */
	sbuf_reset(&rec);
	sbuf_puts(&rec, "{\"v\":1,\"type\":\"exec\",\"argv\":[\"/bin/true\"");
	for (i = 0; i < 3000; i++)
		sbuf_printf(&rec, ",\"%zu\"", i);
	sbuf_puts(&rec, "],\"action\":\"allowed\"}");
	sbuf_reset(&out);
	ASSERT_OK(sink_cut_argv(&out, rec.data, rec.len, 8000), "3000 short arguments cut to 8000 bytes");
	ASSERT_TRUE(out.len <= 8000 && out.len > 7000, "most of the room used");
	/* a record with no argv to cut: its stub */
	sbuf_reset(&out);
	{
		static const char stub_in[] = "{\"v\":1,\"type\":\"exec\",\"exec_id\":\"5:6\",\"pid\":5,\"cwd\":\"/x\","
					      "\"decision\":\"deny\",\"action\":\"killed\"}";
		char want[256];

		ASSERT_OK(sink_stub_record(&out, stub_in, sizeof(stub_in) - 1), "stub");
		snprintf(want, sizeof(want), "{\"v\":1,\"type\":\"exec\",\"exec_id\":\"5:6\",\"pid\":5,\"decision\":\"deny\","
			 "\"action\":\"killed\",\"syslog_cut\":{\"bytes\":%zu,\"stub\":true}}", sizeof(stub_in) - 1);
		ASSERT_STREQ(sbuf_cstr(&out), want, "the record's own fields");
	}
	sbuf_free(&rec);
	sbuf_free(&out);
}

static void test_journal_datagram(void)
{
	const char *rec = "{\"v\":1,\"type\":\"exec\",\"time\":\"t\",\"pid\":7,\"uid\":5,\"filename\":\"/bin/echo\","
			  "\"argv\":[\"echo\",\"a\\nb\"],\"decision\":\"deny\",\"rule\":\"r\",\"action\":\"blocked\",\"session\":null}";
	struct sbuf b = {};
	const char *p;

	ASSERT_OK(sink_format_journal(&b, rec, strlen(rec), 0), "format");
	p = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(p, "MESSAGE=exec /bin/echo a\\nb (uid 5, deny by r, blocked)\n") != NULL, p);
	ASSERT_TRUE(strstr(p, "PRIORITY=4\n") && strstr(p, "SYSLOG_IDENTIFIER=execgate\n"), p);
	ASSERT_TRUE(strstr(p, "EXECGATE_PID=7\n") && strstr(p, "EXECGATE_RULE=r\n"), p);
	ASSERT_TRUE(strstr(p, "EXECGATE_ARGV=[\"echo\",\"a\\nb\"]\n") != NULL, "arrays as JSON");
	ASSERT_TRUE(strstr(p, "EXECGATE_SESSION") == NULL, "null left out");
	sbuf_reset(&b);
	/* a value with a newline: the binary form, name, 64-bit length, bytes */
	rec = "{\"type\":\"exec\",\"cwd\":\"/a\\nb\"}";
	ASSERT_OK(sink_format_journal(&b, rec, strlen(rec), 0), "format");
	p = memmem(b.data, b.len, "EXECGATE_CWD\n\x04\0\0\0\0\0\0\0/a\nb\n", 26);
	ASSERT_TRUE(p != NULL, "binary field");
	ASSERT_EQ(sink_format_journal(&b, "nope", 4, 0), -EINVAL, "not a record");
	sbuf_free(&b);
}

/*
 * A syslog listener that reads as fast as records come but never all of
 * them: the backlog never empties, and its buffer must not keep what was
 * sent (40 MiB go through here).
 */
static void test_sink_backlog_bounded(void)
{
	char dir[] = "/tmp/egsink.XXXXXX", path[64], rec[1200], buf[4096];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct eg_sink *s = NULL;
	struct eg_tap *t;
	size_t held_max = 0, alloc_max = 0, rlen;
	int fd, i, r, n;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "mkdtemp"))
		return;
	snprintf(path, sizeof(path), "%s/log", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (!ASSERT_OK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), "bind the listener"))
		goto out;
	if (!ASSERT_OK(sink_new("syslog", path, 0, NULL, &s), "sink_new"))
		goto out;
	t = sink_tap(s);
	rlen = snprintf(rec, sizeof(rec), "{\"v\":1,\"type\":\"exec\",\"time\":\"2026-01-19T14:00:01.000000000Z\","
			"\"argv\":[\"%01000d\"]}\n", 7);
	/* more than the listener's queue takes: 54 or so wait in the backlog */
	for (i = 0; i < 64; i++)
		t->fn(t, rec, rlen, EG_REC_EXEC, 0);
	t->flushed(t);
	ASSERT_TRUE(sink_backlog_held(s) > 0, "a backlog");
	for (r = 0; r < 5000; r++) {
		for (n = 0; n < 8 && recv(fd, buf, sizeof(buf), 0) > 0; n++)
			;
		for (i = 0; i < n; i++)
			t->fn(t, rec, rlen, EG_REC_EXEC, 0);
		t->flushed(t);
		if (sink_backlog_held(s) > held_max)
			held_max = sink_backlog_held(s);
		if (sink_backlog_allocated(s) > alloc_max)
			alloc_max = sink_backlog_allocated(s);
	}
	ASSERT_EQ(sink_stats(s)->dropped, 0, "nothing dropped: the listener kept up");
	ASSERT_TRUE(sink_stats(s)->sent > 30000, "records went through");
	ASSERT_TRUE(sink_backlog_held(s) > 0, "the backlog never emptied");
	if (!ASSERT_TRUE(held_max <= (4u << 20) + (4u << 20) / 8, "the buffer stays under 4.5 MiB"))
		printf("    held at most %zu bytes, %llu sent\n", held_max, (unsigned long long)sink_stats(s)->sent);
	ASSERT_TRUE(alloc_max <= (8u << 20), "its allocation stays within 8 MiB");
	/* once the listener has taken it all, a buffer the burst grew is given back */
	for (r = 0; r < 100000 && sink_backlog_held(s) > 0; r++) {
		while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
		t->flushed(t);
	}
	ASSERT_TRUE(sink_backlog_allocated(s) <= (4u << 20) / 8, "the emptied backlog's buffer is given back");
out:
	sink_drop_backlog(s);	/* no second's drain at sink_free */
	sink_free(s);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/* A line cut anywhere, alone or with a record glued on, is not a whole object; the records are. */
static void test_line_whole(void)
{
	const char *rec = "{\"v\":1,\"type\":\"exec\",\"argv\":[\"a\\\"}\",\"\\\\\",\"{[\"],"
			  "\"parent\":{\"exec_id\":\"1:2\"},\"e\":[],\"u\":\"\\u00e9\"}";
	size_t n = strlen(rec), cut, bad_alone = 0, bad_glued = 0;
	char glued[512];
	unsigned int i;

	ASSERT_TRUE(query_line_whole(rec, n), rec);
	for (i = 0; i < NLINES; i++)
		ASSERT_TRUE(query_line_whole(lines[i], strlen(lines[i])), lines[i]);
	for (cut = 0; cut < n; cut++) {
		bad_alone += !query_line_whole(rec, cut);
		memcpy(glued, rec, cut);
		memcpy(glued + cut, rec, n);
		bad_glued += !query_line_whole(glued, cut + n);
	}
	ASSERT_EQ(bad_alone, n, "every cut of a record is no whole line");
	ASSERT_EQ(bad_glued, n - 1, "nor a record glued to it (cut 0: the record alone)");
	/* JSON's whitespace at either end, as the parser (and --type) takes it: a CRLF file */
	ASSERT_TRUE(query_line_whole("{\"v\":1}\r", 8), "a trailing CR");
	ASSERT_TRUE(query_line_whole(" \t{\"v\":1} \r", 11), "spaces and tabs around");
	ASSERT_FALSE(query_line_whole(" \r", 2), "whitespace alone");
	ASSERT_FALSE(query_line_whole("{\"v\":1}\r}", 9), "a brace past the CR");
	ASSERT_FALSE(query_line_whole("{}x", 3), "bytes after the object");
	ASSERT_FALSE(query_line_whole("[1]", 3), "not an object");
	ASSERT_FALSE(query_line_whole("", 0), "empty");
}

/* Each record (a JSON line) into g, as `policy generate` reads them. */
static void generate_add_all(struct eg_generate *g, const char *const *recs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		json_t *r = json_loads(recs[i], 0, NULL);

		generate_add(g, r);
		json_decref(r);
	}
}

static void test_generate_tokens(void)
{
	struct sbuf b = {};

#define TOK(t, g, want) do { sbuf_reset(&b); generate_token(&b, t, g); ASSERT_STREQ(sbuf_cstr(&b), want, t); } while (0)
	TOK("a.c", true, "[^ ]*\\.c");
	TOK("/tmp/ccX1.s", true, "[^ ]*\\.s");
	TOK("/tmp/ccX1", true, "[^ ]+");
	TOK("1234", true, "[0-9]+");
	TOK("-c", true, "\\-c");
	TOK("-j2", true, "\\-j2");
	TOK("-plugin-opt=-fresolution=/tmp/cc1.res", true, "\\-plugin\\-opt\\=\\-fresolution\\=[^ ]*\\.res");
	TOK("a.c", false, "a\\.c");
	TOK(".c", true, "\\.c");
#undef TOK
	sbuf_free(&b);
}

static void test_generate_policy(void)
{
	static const char *const recs[] = {
		"{\"type\":\"exec\",\"exec_id\":\"1:1\",\"filename\":\"/usr/bin/cc\",\"argv\":[\"cc\",\"-c\",\"a.c\"],\"depth\":1,\"depth_known\":true}",
		"{\"type\":\"exec\",\"exec_id\":\"2:2\",\"filename\":\"/usr/bin/cc\",\"argv\":[\"cc\",\"-c\",\"b.c\"],\"depth\":2,\"depth_known\":true}",
		"{\"type\":\"exec\",\"exec_id\":\"3:3\",\"filename\":\"/usr/bin/curl\",\"argv\":[\"curl\",\"-s\",\"x\"],\"depth\":1,\"depth_known\":true}",
		"{\"type\":\"exec_failed\",\"exec_id\":null,\"filename\":\"/usr/bin/nc\",\"argv\":[\"nc\",\"-l\"],\"decision\":\"deny\",\"rule\":\"no-nc\",\"action\":\"blocked\"}",
		"{\"type\":\"exec\",\"exec_id\":\"4:4\",\"filename\":\"/opt/t.sh\",\"interpreter\":\"/usr/bin/dash\",\"argv\":[\"/bin/sh\",\"/opt/t.sh\"],\"depth\":0,\"depth_known\":true}",
	};
	struct eg_generate *g = generate_new();
	struct sbuf out = {};
	const char *y;

	ASSERT_EQ(generate_write(g, "nothing", &out), -ENOENT, "no exec: nothing to write");
	generate_add_all(g, recs, sizeof(recs) / sizeof(recs[0]));
	ASSERT_OK(generate_write(g, "a test", &out), "write");
	y = sbuf_cstr(&out);
	ASSERT_TRUE(strstr(y, "default_decision: deny\n") != NULL, y);
	ASSERT_TRUE(strstr(y, "paths: ['/usr/bin/cc']\n    context: {min_depth: 1, max_depth: 2}\n") != NULL, y);
	ASSERT_TRUE(strstr(y, "#   cc -c a.c\n") && strstr(y, "- '^\\-c\\ [^ ]*\\.c$'\n"), y);
	/* network tools are asked for, with a timeout so that --strict has nothing to say */
	ASSERT_TRUE(strstr(y, "paths: ['/usr/bin/curl']\n    context: {min_depth: 1, max_depth: 1}\n    args_patterns:\n"
			      "      - '^\\-s\\ x$'\n    decision: approval\n") != NULL, y);
	ASSERT_TRUE(strstr(y, "approval_timeout: 60s") != NULL, y);
	/* a script and its interpreter are both judged, so both are allowed */
	ASSERT_TRUE(strstr(y, "paths: ['/opt/t.sh']") && strstr(y, "paths: ['/usr/bin/dash']"), y);
	/* what was refused: a commented-out rule */
	ASSERT_TRUE(strstr(y, "#    # blocked by rule no-nc: nc -l\n#    paths: ['/usr/bin/nc']\n") != NULL, y);
	sbuf_free(&out);
	generate_free(g);
}

/*
 * paths: entries are globs: a program named like one (/tmp/ and a star,
 * run once while the records were made) was written as that glob, a rule
 * for every program under /tmp. It gets a comment, and no rule.
 */
static void test_generate_glob_named_program(void)
{
	static const char *const recs[] = {
		"{\"type\":\"exec\",\"exec_id\":\"1:1\",\"filename\":\"/tmp/*\",\"argv\":[\"/tmp/*\"],\"depth\":1,\"depth_known\":true}",
		"{\"type\":\"exec\",\"exec_id\":\"2:2\",\"filename\":\"/opt/x[1]\",\"argv\":[\"x\"],\"depth\":1,\"depth_known\":true}",
		"{\"type\":\"exec\",\"exec_id\":\"4:4\",\"filename\":\"/tmp/?\u2028  - {name: x, basenames: [sh], decision: allow}\","
		"\"argv\":[\"x\"],\"depth\":1,\"depth_known\":true}",
		"{\"type\":\"exec\",\"exec_id\":\"3:3\",\"filename\":\"/usr/bin/cc\",\"argv\":[\"cc\"],\"depth\":1,\"depth_known\":true}",
	};
	struct eg_generate *g = generate_new();
	struct sbuf out = {};
	const char *y;

	generate_add_all(g, recs, sizeof(recs) / sizeof(recs[0]));
	ASSERT_OK(generate_write(g, "a test", &out), "write");
	y = sbuf_cstr(&out);
	ASSERT_TRUE(strstr(y, "paths: ['/tmp/*']") == NULL, y);
	ASSERT_TRUE(strstr(y, "paths: ['/opt/x[1]']") == NULL, y);
	ASSERT_TRUE(strstr(y, "no rule written for it\n  #   /tmp/*\n") != NULL, y);
	/* a line separator (U+2028: a line break to YAML) in the path does not end the comment */
	ASSERT_TRUE(strstr(y, "\xe2\x80\xa8") == NULL, y);
	ASSERT_TRUE(strstr(y, "paths: ['/usr/bin/cc']") != NULL, y);
	sbuf_free(&out);
	generate_free(g);
}

/* A generated policy's comments quote records: a '\n' in them would end the comment, a control byte reach the terminal. */
static void test_generate_escapes(void)
{
	static const char *const recs[] = {
		"{\"type\":\"exec\",\"exec_id\":\"1:1\",\"filename\":\"/usr/bin/cc\",\"argv\":[\"cc\",\"-c\",\"a.c\"],\"depth\":1,\"depth_known\":true}",
		"{\"type\":\"exec_failed\",\"exec_id\":null,\"filename\":\"/tmp/\\u009bx\\ndefault_decision: allow\","
		"\"argv\":[\"x\",\"\\u007f\\u0085\\u001b[2J\"],\"decision\":\"deny\",\"rule\":\"r\\u001b]0;t\\u0007\",\"action\":\"blocked\"}",
	};
	struct eg_generate *g = generate_new();
	struct sbuf out = {};
	const char *y;
	size_t i;

	generate_add_all(g, recs, sizeof(recs) / sizeof(recs[0]));
	ASSERT_OK(generate_write(g, "a test", &out), "write");
	y = sbuf_cstr(&out);
	ASSERT_TRUE(strstr(y, "\ndefault_decision: allow") == NULL, y);
	ASSERT_TRUE(strstr(y, "#    # blocked by rule r\\x1b]0;t\\x07: \\xc2\\x9bx\\x0adefault_decision: allow "
			      "\\x7f\\xc2\\x85\\x1b[2J\n") != NULL, y);
	for (i = 0; i < out.len; i++)
		if (!ASSERT_TRUE(out.data[i] == '\n' || ((unsigned char)out.data[i] >= 0x20 && out.data[i] != 0x7f &&
				 !((unsigned char)out.data[i] == 0xc2 && (unsigned char)out.data[i + 1] < 0xa0)), y))
			break;
	sbuf_free(&out);
	generate_free(g);
}

int main(void)
{
	RUN(test_parse_time);
	RUN(test_filters);
	RUN(test_tree);
	RUN(test_tree_deep);
	RUN(test_tree_marker_escapes);
	RUN(test_text);
	RUN(test_text_escapes);
	RUN(test_lineage_bounded);
	RUN(test_syslog_datagram);
	RUN(test_journal_datagram);
	RUN(test_sink_backlog_bounded);
	RUN(test_syslog_cut);
	RUN(test_line_whole);
	RUN(test_generate_tokens);
	RUN(test_generate_policy);
	RUN(test_generate_escapes);
	RUN(test_generate_glob_named_program);
	return UNIT_DONE();
}
