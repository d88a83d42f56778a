// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * --api-listen: the HTTP and WebSocket API (api/api.h) on the daemon's
 * control server, runs and task storage. Off unless asked; a listener
 * beyond loopback is said once on stderr.
 */
#include <string.h>
#include <bpf/libbpf.h>
#include "api/api.h"
#include "daemon/daemon_int.h"
#include "util/log.h"
#include "execgate.skel.h"

int daemon_api_start(struct daemon *d)
{
	struct eg_api_opts ao = {};
	char msg[512];
	int err;

	if (!d->o.api_listen)
		return 0;
	ao.loop = d->loop;
	ao.ctl = d->ctl;
	ao.procs = d->procs;
	ao.listen = d->o.api_listen;
	ao.token_file = d->o.api_token_file;
	ao.run_as_set = d->o.api_run_as_set;
	ao.run_as_uid = d->o.api_run_as_uid;
	ao.run_as_gid = d->o.api_run_as_gid;
	ao.output_path = d->o.output && strcmp(d->o.output, "-") ? d->o.output : NULL;
	ao.tasks_fd = bpf_map__fd(d->skel->maps.tasks);
	err = api_start(&ao, &d->api, msg, sizeof(msg));
	if (err) {
		p_err("%s", msg);
		return err;
	}
	if (strncmp(d->o.api_listen, "127.", 4) && strncmp(d->o.api_listen, "[::1]", 5) &&
	    strncmp(d->o.api_listen, "localhost", 9) && strchr(d->o.api_listen, ':'))
		p_warn("--api-listen %s: the API is reachable beyond this host (a token is still needed)",
		       d->o.api_listen);
	p_info("HTTP API on port %d (docs/api.md)", api_port(d->api));
	return 0;
}

int daemon_api_check(struct daemon *d)
{
	struct eg_api_opts ao = { .listen = d->o.api_listen, .token_file = d->o.api_token_file };
	char msg[512];
	int err;

	if (!d->o.api_listen)
		return 0;
	err = api_check(&ao, msg, sizeof(msg));
	if (err)
		p_err("%s", msg);
	return err;
}

void daemon_api_stop(struct daemon *d)
{
	api_stop(d->api);
	d->api = NULL;
}
