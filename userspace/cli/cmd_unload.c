// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate unload: remove everything a daemon left pinned (the task storage
 * that keeps depths across restarts, and whatever else stayed), so the
 * kernel frees it. Refuses while a daemon runs on that pin path.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "daemon/instance.h"
#include "enforce/kmaps.h"
#include "trace/tracer.h"
#include "util/caps.h"
#include "util/log.h"
#include "util/paths.h"

int do_unload(int argc, char **argv)
{
	static const char doc[] =
		"Remove everything pinned under --pin-path: the task storage that carries exec\n"
		"depths across daemon restarts, kernel rules a --persist daemon left (switched\n"
		"off first), and anything a killed daemon left. Returns once the kernel has let\n"
		"the programs go, and a killed daemon's pid file and socket in /run/execgate.\n"
		"Refuses while a daemon runs there (stop it first).";
	struct cli_common common = {};
	struct eg_paths p;
	uint32_t progs[128];
	struct kmaps km;
	pid_t pid = 0;
	int rc, n, left;

	if (cli_parse_no_args(argc, argv, doc, &common))
		return EXIT_USAGE;
	if (eg_paths_resolve(common.pin_path, &p)) {
		p_err("--pin-path must be an absolute path");
		return EXIT_USAGE;
	}
	if (!eg_have_bpf_caps()) {
		p_err(EG_NEEDS_ROOT);
		return 1;
	}
	rc = instance_running(&p, &pid);
	if (rc == 1) {
		p_err("a daemon (pid %d) runs on %s: stop it first", (int)pid, p.pin);
		return 1;
	}
	/*
	 * A killed daemon's pid file and socket (its output's record stays for
	 * `query`): only when its pins say no daemon holds them.
	 */
	if (rc == 0 && !access(p.pin, F_OK)) {
		unlink(p.pidfile);
		unlink(p.sock);
	}
	if (access(p.pin, F_OK)) {
		if (common.json)
			printf("{\"pin_path\":\"%s\",\"removed\":false}\n", p.pin);
		else
			printf("nothing pinned at %s\n", p.pin);
		return 0;
	}
	if (!kmaps_open_pinned(p.pin, &km)) {
		rc = kmaps_unload(&km);
		kmaps_close(&km);
		if (rc)
			p_warn("cannot switch off the kernel rules pinned at %s: %s", p.pin, strerror(-rc));
	}
	n = tracer_pinned_progs(p.pin, progs, 0, (int)(sizeof(progs) / sizeof(progs[0])));
	rc = tracer_unpin_dir(p.pin);
	if (rc) {
		p_err("cannot remove %s: %s", p.pin, strerror(-rc));
		return 1;
	}
	left = tracer_wait_progs_gone(progs, n, 10000);
	if (left < 0) {
		p_warn("removed the pins at %s, but cannot tell whether the kernel has let the programs go: %s",
		       p.pin, strerror(-left));
	} else if (left) {
		p_err("%d of the %d programs pinned at %s are still loaded 10 s after their pins went: "
		      "another process holds them (bpftool prog show)", left, n, p.pin);
		return 1;
	}
	if (common.json)
		printf("{\"pin_path\":\"%s\",\"removed\":true}\n", p.pin);
	else
		printf("removed everything pinned at %s\n", p.pin);
	return 0;
}
