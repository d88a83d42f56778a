// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Placeholder: the real probes are being written. */
#include <errno.h>
#include <string.h>
#include "commands.h"
#include "log.h"
#include "probe.h"

const char *eg_feature_name(enum eg_feature f)
{
	(void)f;
	return "?";
}

int probe_features(struct eg_features *ret)
{
	memset(ret, 0, sizeof(*ret));
	return 0;
}

void probe_mode(const struct eg_features *f, struct eg_mode *ret)
{
	(void)f;
	ret->tracer = "tp_btf";
	ret->kernel_enforcement = "none";
	ret->session_enforcement = "none";
}

int do_probe(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	p_err("probe: not built yet");
	return 1;
}
