// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The service parts without a kernel: PATH-search collapsing, the volume
 * filters, the metrics text, the metrics endpoint's address and request
 * parsing.
 */
#include <errno.h>
#include <string.h>
#include "unit.h"
#include "daemon/httpd.h"
#include "daemon/metrics.h"
#include "events/collapse.h"
#include "events/filter.h"
#include "execgate.h"

/* ---- records made by hand ---------------------------------------------- */

struct rec {
	struct eg_record r;
	struct eg_str argv[8];
};

static void mk(struct rec *x, uint32_t type, uint32_t tid, uint64_t t_ms, int err, const char *filename,
	       const char *requested, const char *const *argv)
{
	size_t n = 0;

	memset(x, 0, sizeof(*x));
	x->r.h.type = type;
	x->r.h.tid = tid;
	x->r.h.pid = tid;
	x->r.h.ktime_ns = t_ms * 1000000ull;
	x->r.h.err = err;
	x->r.filename = (struct eg_str){ filename, strlen(filename) };
	x->r.requested = (struct eg_str){ requested, strlen(requested) };
	while (argv[n]) {
		x->argv[n] = (struct eg_str){ argv[n], strlen(argv[n]) };
		n++;
	}
	x->r.argv = x->argv;
	x->r.argv_kept = n;
	x->r.h.argc = n;
	strcpy(x->r.h.comm, "sh");
}

struct sink {
	char lines[4096];
	size_t len;
	unsigned int n;
};

static void emit(void *arg, const char *line, size_t len)
{
	struct sink *s = arg;

	if (s->len + len < sizeof(s->lines)) {
		memcpy(s->lines + s->len, line, len);
		s->len += len;
	}
	s->n++;
}

static void test_collapse_folds_a_path_search(void)
{
	static const char *const av[] = { "curl", "-s", "x", NULL };
	struct sink s = {};
	struct eg_collapse *c = collapse_new(emit, &s);
	struct eg_path_search ps;
	struct rec f1, f2, ok;

	mk(&f1, EG_EVENT_EXEC_FAILED, 10, 1000, -ENOENT, "/usr/local/bin/curl", "", av);
	mk(&f2, EG_EVENT_EXEC_FAILED, 10, 1001, -ENOENT, "/usr/sbin/curl", "", av);
	mk(&ok, EG_EVENT_EXEC, 10, 1002, 0, "/usr/bin/curl", "/usr/bin/curl", av);
	ASSERT_TRUE(collapse_failed(c, &f1.r, "F1\n", 3, false), "first miss held");
	ASSERT_TRUE(collapse_failed(c, &f2.r, "F2\n", 3, false), "second miss held");
	ASSERT_TRUE(collapse_exec(c, &ok.r, &ps), "the exec ends the search");
	ASSERT_EQ(ps.failed, 2, "failed");
	ASSERT_EQ(ps.ndirs, 2, "dirs");
	ASSERT_TRUE(ps.dirs[0].len == 14 && !memcmp(ps.dirs[0].p, "/usr/local/bin", 14), "first dir");
	ASSERT_TRUE(ps.dirs[1].len == 9 && !memcmp(ps.dirs[1].p, "/usr/sbin", 9), "second dir");
	ASSERT_EQ(s.n, 0, "nothing written");
	collapse_free(c);
	ASSERT_EQ(s.n, 0, "nothing left");
}

static void test_collapse_writes_what_it_cannot_fold(void)
{
	static const char *const av[] = { "nosuch", "a", NULL };
	static const char *const other[] = { "true", "a", NULL };
	struct sink s = {};
	struct eg_collapse *c = collapse_new(emit, &s);
	struct eg_collapse_stats st;
	struct eg_path_search ps;
	struct rec f1, f2, f3, ok, eacces;

	/* not found at all: written once the hold time is over, in order */
	mk(&f1, EG_EVENT_EXEC_FAILED, 20, 1000, -ENOENT, "/a/nosuch", "", av);
	mk(&f2, EG_EVENT_EXEC_FAILED, 20, 1001, -ENOENT, "/b/nosuch", "", av);
	ASSERT_TRUE(collapse_failed(c, &f1.r, "A\n", 2, false) && collapse_failed(c, &f2.r, "B\n", 2, false), "held");
	collapse_expire(c, 1001 * 1000000ull + COLLAPSE_HOLD_NS / 2);
	ASSERT_EQ(s.n, 0, "not yet");
	collapse_expire(c, 1000 * 1000000ull + COLLAPSE_HOLD_NS + 1);
	ASSERT_EQ(s.n, 2, "both written");
	ASSERT_TRUE(s.len == 4 && !memcmp(s.lines, "A\nB\n", 4), "in order");
	/* another program next: the failure goes out first, nothing folded */
	mk(&f3, EG_EVENT_EXEC_FAILED, 21, 2000, -ENOENT, "/a/nosuch", "", av);
	mk(&ok, EG_EVENT_EXEC, 21, 2001, 0, "/usr/bin/true", "/usr/bin/true", other);
	ASSERT_TRUE(collapse_failed(c, &f3.r, "C\n", 2, false), "held");
	ASSERT_FALSE(collapse_exec(c, &ok.r, &ps), "not its search");
	ASSERT_EQ(s.n, 3, "written before the exec");
	/* not ENOENT: never held; too late: not folded */
	mk(&eacces, EG_EVENT_EXEC_FAILED, 22, 3000, -EACCES, "/a/x", "", av);
	ASSERT_FALSE(collapse_failed(c, &eacces.r, "D\n", 2, false), "EACCES written now");
	mk(&f1, EG_EVENT_EXEC_FAILED, 23, 4000, -ENOENT, "/a/nosuch", "", av);
	mk(&ok, EG_EVENT_EXEC, 23, 4000 + COLLAPSE_HOLD_NS / 1000000 + 1, 0, "/b/nosuch", "/b/nosuch", av);
	ASSERT_TRUE(collapse_failed(c, &f1.r, "E\n", 2, false), "held");
	ASSERT_FALSE(collapse_exec(c, &ok.r, &ps), "too late to fold");
	ASSERT_EQ(s.n, 4, "the late one written");
	/* one the policy denied: never held, and what its thread held goes out first */
	mk(&f1, EG_EVENT_EXEC_FAILED, 24, 5000, -ENOENT, "/a/nosuch", "", av);
	mk(&f2, EG_EVENT_EXEC_FAILED, 24, 5001, -ENOENT, "/b/nosuch", "", av);
	ASSERT_TRUE(collapse_failed(c, &f1.r, "F\n", 2, false), "held");
	ASSERT_FALSE(collapse_failed(c, &f2.r, "G\n", 2, true), "a denied miss is written now");
	ASSERT_EQ(s.n, 5, "after the one held before it");
	collapse_stats(c, &st);
	ASSERT_EQ(st.folded, 0, "folded");
	ASSERT_EQ(st.written_late, 5, "written late");
	ASSERT_EQ(st.held, 0, "held");
	collapse_free(c);
}

static void test_collapse_script_and_bounds(void)
{
	static const char *const av[] = { "myscript", "arg", NULL };
	static const char *const committed[] = { "/bin/sh", "/opt/bin/myscript", "arg", NULL };
	struct sink s = {};
	struct eg_collapse *c = collapse_new(emit, &s);
	struct eg_collapse_stats st;
	struct eg_path_search ps;
	struct rec f, ok;
	unsigned int i;

	mk(&f, EG_EVENT_EXEC_FAILED, 30, 1000, -ENOENT, "/usr/bin/myscript", "", av);
	mk(&ok, EG_EVENT_EXEC, 30, 1001, 0, "/usr/bin/dash", "/opt/bin/myscript", committed);
	ok.r.h.flags |= EG_F_SCRIPT;
	ASSERT_TRUE(collapse_failed(c, &f.r, "S\n", 2, false), "held");
	ASSERT_TRUE(collapse_exec(c, &ok.r, &ps) && ps.failed == 1, "a script's search folds");
	/* one thread past the per-thread bound: the held ones go out, nothing is lost */
	for (i = 0; i <= COLLAPSE_CHAIN_MAX; i++) {
		mk(&f, EG_EVENT_EXEC_FAILED, 31, 2000, -ENOENT, "/x/myscript", "", av);
		collapse_failed(c, &f.r, "L\n", 2, false);
	}
	collapse_stats(c, &st);
	ASSERT_EQ(st.written_late, COLLAPSE_CHAIN_MAX, "the full chain written");
	ASSERT_EQ(st.held, 1, "the next one held");
	collapse_flush(c);
	collapse_stats(c, &st);
	ASSERT_EQ(st.held, 0, "flushed");
	ASSERT_EQ(s.n, COLLAPSE_CHAIN_MAX + 1, "every failure written once");
	collapse_free(c);
}

static void test_filters(void)
{
	static const char *const av[] = { "x", NULL };
	static const char *const comm[] = { "cron*" };
	static const char *const path[] = { "/usr/lib/*" };
	static const uint32_t uids[] = { 1000 };
	struct eg_filter f = { .comm = comm, .n_comm = 1, .path = path, .n_path = 1 };
	struct rec x;

	mk(&x, EG_EVENT_EXEC, 1, 1, 0, "/usr/lib/nagios/check", "/usr/lib/nagios/check", av);
	ASSERT_TRUE(filter_active(&f), "active");
	ASSERT_EQ(filter_match(&f, &x.r), EG_FILTER_PATH, "'*' crosses '/'");
	mk(&x, EG_EVENT_EXEC, 1, 1, 0, "/usr/bin/true", "/usr/bin/true", av);
	strcpy(x.r.h.comm, "crond");
	ASSERT_EQ(filter_match(&f, &x.r), EG_FILTER_COMM, "comm glob");
	strcpy(x.r.h.comm, "bash");
	ASSERT_EQ(filter_match(&f, &x.r), EG_FILTER_NONE, "kept");
	f.uids = uids;
	f.n_uids = 1;
	ASSERT_EQ(filter_match(&f, &x.r), EG_FILTER_UID, "uid 0 is not 1000");
	x.r.h.uid = 1000;
	ASSERT_EQ(filter_match(&f, &x.r), EG_FILTER_NONE, "uid 1000 kept");
	filter_free(&f);
}

static void test_metrics_text(void)
{
	struct eg_metrics m = {};
	struct sbuf b = {};
	const char *p, *line;
	int families = 0;

	m.daemon = true;
	m.have_counters = true;
	m.k.exec = 7;
	m.k.lost_exec = 2;
	m.k.lost_other = 4;
	m.exec_failed_mode = "collapse";
	m.nprogs = 1;
	strcpy(m.progs[0].name, "handle_exec");
	m.progs[0].recursion_misses = 3;
	metrics_render(&b, &m);
	ASSERT_FALSE(b.oom, "rendered");
	p = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(p, "\nexecgate_execs_total 7\n") != NULL, "execs");
	ASSERT_TRUE(strstr(p, "\nexecgate_lost_records_total{cause=\"ringbuf_full\",record=\"exec\"} 2\n") != NULL,
		    "ring losses");
	ASSERT_TRUE(strstr(p, "\nexecgate_lost_records_total{cause=\"ringbuf_full\",record=\"other\"} 4\n") != NULL,
		    "ring losses of the other records (a loader's program, a scope)");
	ASSERT_TRUE(strstr(p, "\nexecgate_lost_records_total{cause=\"bpf_recursion\",record=\"any\"} 3\n") != NULL,
		    "recursion summed");
	ASSERT_TRUE(strstr(p, "\nexecgate_bpf_recursion_misses_total{program=\"handle_exec\"} 3\n") != NULL,
		    "per program");
	ASSERT_TRUE(strstr(p, "\nexecgate_exec_failed_mode{mode=\"collapse\"} 1\n") != NULL, "mode");
	ASSERT_TRUE(strstr(p, "\nexecgate_daemon_up 1\n") != NULL, "up");
	/* every family: HELP, then TYPE, counters named _total */
	for (line = p; *line; line = strchr(line, '\n') + 1) {
		if (!strncmp(line, "# HELP ", 7)) {
			const char *name = line + 7, *sp = strchr(name, ' '), *next = strchr(line, '\n') + 1;
			bool counter;

			families++;
			ASSERT_TRUE(!strncmp(next, "# TYPE ", 7) && !strncmp(next + 7, name, sp - name), "TYPE follows");
			counter = !strncmp(next + 7 + (sp - name), " counter", 8);
			ASSERT_EQ(counter, sp - name > 6 && !strncmp(sp - 6, "_total", 6), "counter iff _total");
		}
	}
	ASSERT_TRUE(families > 30, "families");
	sbuf_reset(&b);
	m.daemon = false;
	metrics_render(&b, &m);
	p = sbuf_cstr(&b);
	ASSERT_TRUE(strstr(p, "\nexecgate_daemon_up 0\n") != NULL, "fallback says so");
	ASSERT_TRUE(strstr(p, "policy_decisions") == NULL, "only the kernel's counters");
	sbuf_free(&b);
}

static void test_listen_addresses(void)
{
	static const char *const bad[] = { ":9464", "9464", "*:9464", "host:9464", "::1:9464", "[::1]9464",
					   "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "1.2.3:9", "" };
	struct httpd_addr a;
	char err[256];
	size_t i;

	ASSERT_OK(httpd_parse_addr("127.0.0.1:9464", &a, err, sizeof(err)), "v4 loopback");
	ASSERT_TRUE(a.loopback, "loopback");
	ASSERT_STREQ(a.text, "127.0.0.1:9464", "text");
	ASSERT_OK(httpd_parse_addr("localhost:1", &a, err, sizeof(err)), "localhost");
	ASSERT_TRUE(a.loopback, "localhost is loopback");
	ASSERT_OK(httpd_parse_addr("[::1]:9464", &a, err, sizeof(err)), "v6 loopback");
	ASSERT_TRUE(a.loopback, "::1");
	ASSERT_OK(httpd_parse_addr("0.0.0.0:9464", &a, err, sizeof(err)), "every interface, spelled");
	ASSERT_FALSE(a.loopback, "0.0.0.0");
	ASSERT_OK(httpd_parse_addr("[::]:9464", &a, err, sizeof(err)), "v6 any, spelled");
	ASSERT_FALSE(a.loopback, "::");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (!ASSERT_EQ(httpd_parse_addr(bad[i], &a, err, sizeof(err)), -EINVAL, bad[i]))
			continue;
		ASSERT_TRUE(err[0] == '\'', "the reason names the spec");
	}
}

static void test_http_requests(void)
{
	static const struct { const char *req; int code; bool head; } cases[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200, false },
		{ "HEAD /metrics HTTP/1.0\n\n", 200, true },
		{ "GET /metrics?x=1 HTTP/1.0\r\n\r\n", 200, false },
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n", 0, false },
		{ "GET /metricsx HTTP/1.0\r\n\r\n", 404, false },
		{ "GET / HTTP/1.0\r\n\r\n", 404, false },
		{ "POST /metrics HTTP/1.0\r\n\r\n", 405, false },
		{ "GET /metrics\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/2.0\r\n\r\n", 400, false },
		{ "GET  /metrics HTTP/1.0\r\n\r\n", 400, false },
		{ "GET /metrics HTTP/1.0 x\r\n\r\n", 400, false },
	};
	static char big[HTTPD_MAX_REQUEST];
	size_t i;
	bool head;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		head = !cases[i].head;
		ASSERT_EQ(httpd_parse_request(cases[i].req, strlen(cases[i].req), &head), cases[i].code, cases[i].req);
		if (cases[i].code == 200)
			ASSERT_EQ(head, cases[i].head, "HEAD");
	}
	memset(big, 'a', sizeof(big));
	ASSERT_EQ(httpd_parse_request(big, sizeof(big) - 1, &head), 0, "still waiting");
	ASSERT_EQ(httpd_parse_request(big, sizeof(big), &head), 431, "too large");
	ASSERT_EQ(httpd_parse_request("GET /metrics HTTP/1.0\0\r\n\r\n", 26, &head), 400, "NUL in the line");
}

int main(void)
{
	RUN(test_collapse_folds_a_path_search);
	RUN(test_collapse_writes_what_it_cannot_fold);
	RUN(test_collapse_script_and_bounds);
	RUN(test_filters);
	RUN(test_metrics_text);
	RUN(test_listen_addresses);
	RUN(test_http_requests);
	return UNIT_DONE();
}
