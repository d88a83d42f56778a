// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate probe: print what probe_features() found and the mode that follows. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "events/format.h"
#include "trace/probe.h"
#include "util/caps.h"
#include "util/json.h"
#include "util/log.h"

/* `execgate probe` */

struct probe_args {
	bool json;
};

static const struct argp_option probe_options[] = {
	{ "json", 'j', NULL, 0, "Print one JSON object instead of a table", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's messages, including the verifier log of refused probes", 0 },
	{},
};

static const char probe_doc[] =
	"Report which kernel features execgate can use on this machine, and the "
	"mode the daemon will run in.\v"
	"Each feature is tried for real (a tiny BPF program loaded, a map created, "
	"a syscall made in a throwaway child), never guessed from the kernel "
	"version. An unavailable feature comes with the errno and the step that "
	"failed, and a hint.\n\n"
	"Features: btf, ringbuf, task_storage, tracepoint, tp_btf, fentry, bpf_lsm, "
	"bpf_lsm_cgroup, send_signal, seccomp_notif, wait_killable_recv, pidfd.\n\n"
	"Mode: tracer=tp_btf needs tp_btf, task_storage, ringbuf and tracepoint; "
	"kernel_enforcement is bpf_lsm, else kill_on_exec (send_signal and tp_btf), "
	"else none; session_enforcement=seccomp_notify needs seccomp_notif and pidfd.\n\n"
	"Needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN). Mounts tracefs "
	"if it is missing. Exit status: 0 when the probe ran, even if features are "
	"missing; 1 on errors; 2 on usage errors.";

static error_t probe_parse(int key, char *arg, struct argp_state *state)
{
	struct probe_args *a = state->input;

	switch (key) {
	case 'j':
		a->json = true;
		break;
	case 'v':
		eg_verbose = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void print_plain(const struct eg_features *f, const struct eg_mode *m)
{
	int i;

	printf("%-20s %-12s %s\n", "FEATURE", "STATUS", "REASON");
	for (i = 0; i < EG_FEAT__COUNT; i++) {
		const struct eg_feature_result *r = &f->r[i];
		const char *status = r->available ? "available" : "unavailable";

		if (r->reason[0])
			printf("%-20s %-12s %s\n", eg_feature_name(i), status, r->reason);
		else
			printf("%-20s %s\n", eg_feature_name(i), status);
	}
	printf("mode: tracer=%s kernel_enforcement=%s session_enforcement=%s exec_failed_source=%s\n",
	       m->tracer, m->kernel_enforcement, m->session_enforcement, m->exec_failed_source);
}

static int print_json(const struct eg_features *f, const struct eg_mode *m)
{
	struct sbuf b = {};
	int i, first = 1, ffirst, err = 0;
	char ebuf[16];

	sbuf_puts(&b, "{\"features\":{");
	for (i = 0; i < EG_FEAT__COUNT; i++) {
		const struct eg_feature_result *r = &f->r[i];
		const char *name;

		json_key(&b, eg_feature_name(i), &first);
		ffirst = 1;
		sbuf_putc(&b, '{');
		json_key(&b, "available", &ffirst);
		sbuf_puts(&b, r->available ? "true" : "false");
		if (!r->available) {
			name = eg_errno_name(r->err, ebuf, sizeof(ebuf));
			json_key(&b, "errno", &ffirst);
			json_str(&b, name, strlen(name));
		}
		if (r->reason[0]) {
			json_key(&b, "reason", &ffirst);
			json_str(&b, r->reason, strlen(r->reason));
		}
		sbuf_putc(&b, '}');
	}
	sbuf_puts(&b, "},\"mode\":{");
	first = 1;
	json_key(&b, "tracer", &first);
	json_str(&b, m->tracer, strlen(m->tracer));
	json_key(&b, "kernel_enforcement", &first);
	json_str(&b, m->kernel_enforcement, strlen(m->kernel_enforcement));
	json_key(&b, "session_enforcement", &first);
	json_str(&b, m->session_enforcement, strlen(m->session_enforcement));
	json_key(&b, "exec_failed_source", &first);
	json_str(&b, m->exec_failed_source, strlen(m->exec_failed_source));
	sbuf_puts(&b, "}}\n");
	if (b.oom)
		err = -ENOMEM;
	else if (fwrite(b.data, 1, b.len, stdout) != b.len)
		err = -EIO;
	sbuf_free(&b);
	return err;
}

int do_probe(int argc, char **argv)
{
	static char prog_name[] = "execgate probe";
	const struct argp argp = {
		.options = probe_options,
		.parser = probe_parse,
		.doc = probe_doc,
	};
	struct probe_args args = {};
	struct eg_features f;
	struct eg_mode m;
	int err;

	argv[0] = prog_name;
	err = argp_parse(&argp, argc, argv, 0, NULL, &args);
	if (err)
		return EXIT_USAGE;
	eg_json_errors = args.json;
	eg_libbpf_setup();
	if (!eg_have_bpf_caps()) {
		p_err(EG_NEEDS_ROOT);
		return 1;
	}
	probe_features(&f);
	probe_mode(&f, &m);
	if (args.json) {
		err = print_json(&f, &m);
		if (err) {
			p_err("writing the output failed: %s", strerror(-err));
			return 1;
		}
	} else {
		print_plain(&f, &m);
	}
	if (fflush(stdout)) {
		p_err("writing the output failed: %s", strerror(errno));
		return 1;
	}
	return 0;
}
