// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate metrics: the daemon's counters in the Prometheus text format
 * (docs/metrics.md), asked over the control socket. Without a daemon that
 * answers, the kernel's counters are read from the pinned maps, with
 * execgate_daemon_up 0 and a line on stderr that says so.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "ctl/client.h"
#include "daemon/metrics.h"
#include "trace/tracer.h"
#include "util/caps.h"
#include "util/jsonw.h"
#include "util/log.h"
#include "util/paths.h"

static const char doc[] =
"Print the daemon's metrics in the Prometheus text format (docs/metrics.md): "
"execs, failed execs, records lost by cause, output drops, BPF recursion "
"misses, policy decisions and reloads, sessions and approvals. Asks the daemon "
"of --pin-path over its control socket (root or its --ctl-group); when no "
"daemon answers, reads the kernel's counters it left pinned "
"(execgate_daemon_up 0) and says so on stderr. --json wraps the text in a "
"JSON object.";

static int print(const struct cli_common *c, const char *text, size_t len, bool daemon, const char *pin)
{
	struct sbuf b = {};
	struct jsonw w;
	int rc;

	if (!c->json) {
		sbuf_put(&b, text, len);
	} else {
		jsonw_init(&w, &b);
		jsonw_start_object(&w);
		jsonw_bool_field(&w, "daemon_running", daemon);
		jsonw_string_field(&w, "pin_path", pin);
		jsonw_string_field(&w, "source", daemon ? "daemon" : "pinned maps");
		jsonw_key(&w, "text");
		jsonw_bytes(&w, text, len);
		jsonw_end_object(&w);
		sbuf_putc(&b, '\n');
	}
	rc = cli_write(&b);
	sbuf_free(&b);
	return rc;
}

/* No daemon answers: the kernel's counters stay pinned while tracing state is. */
static int from_pins(const struct cli_common *c, const struct eg_paths *p, bool stuck)
{
	struct eg_metrics m = {};
	char path[PATH_MAX + 16];
	struct sbuf b = {};
	int fd, rc;

	if (!eg_have_bpf_caps()) {
		p_err("%s on %s; reading its pinned maps %s",
		      stuck ? "the daemon does not answer" : "no daemon is running", p->pin, EG_NEEDS_ROOT);
		return EXIT_NO_DAEMON;
	}
	snprintf(path, sizeof(path), "%s/counters", p->pin);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		m.have_counters = !tracer_read_counters(fd, &m.k);
		close(fd);
	}
	if (!m.have_counters) {
		if (stuck)
			p_err("the daemon on %s does not answer and no counters are pinned", p->pin);
		else
			p_err("no daemon is running on %s and it left no counters pinned (start one with 'execgate daemon')",
			      p->pin);
		return EXIT_NO_DAEMON;
	}
	p_info("%s on %s: the kernel's counters from the pinned maps (execgate_daemon_up 0)",
	       stuck ? "the daemon does not answer" : "no daemon is running", p->pin);
	metrics_render(&b, &m);
	rc = b.oom ? (p_err("out of memory"), 1) : print(c, b.data, b.len, false, p->pin);
	sbuf_free(&b);
	return rc;
}

int do_metrics(int argc, char **argv)
{
	struct cli_common common = {};
	json_t *reply = NULL, *t;
	struct eg_paths p;
	char err[1024];
	int e, rc;

	if (cli_parse_no_args(argc, argv, doc, &common))
		return EXIT_USAGE;
	if (eg_paths_resolve(common.pin_path, &p)) {
		p_err("--pin-path must be an absolute path");
		return EXIT_USAGE;
	}
	e = ctl_call_timeout(common.pin_path, "{\"op\":\"metrics\"}", 3000, &reply, err, sizeof(err));
	if (e == -ENOENT || e == -ECONNREFUSED || e == -ETIMEDOUT) {
		json_decref(reply);
		rc = from_pins(&common, &p, e == -ETIMEDOUT);
		return rc && rc != EXIT_NO_DAEMON ? rc : e == -ETIMEDOUT ? EXIT_NOT_ANSWERING : EXIT_NOT_RUNNING;
	}
	if (e) {
		json_decref(reply);
		p_err("%s", err);
		return 1;
	}
	t = json_object_get(reply, "text");
	if (!json_is_string(t)) {
		json_decref(reply);
		p_err("the daemon's reply has no metrics text");
		return 1;
	}
	rc = print(&common, json_string_value(t), json_string_length(t), true, p.pin);
	json_decref(reply);
	return rc;
}
