// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/common.h"
#include "ctl/client.h"
#include "util/log.h"
#include "util/paths.h"

static const struct argp_option common_options[] = {
	{ "pin-path", 'p', "DIR", 0, "The daemon to talk to, by its pin directory (default " EG_PIN_PATH_DEFAULT ")", -1 },
	{ "json", 'j', NULL, 0, "Machine output: JSON on stdout, errors as {\"error\":...}", -1 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's debug output", -1 },
	{},
};

static error_t common_parse(int key, char *arg, struct argp_state *state)
{
	struct cli_common *c = state->input;

	switch (key) {
	case 'p':
		if (arg[0] != '/')
			argp_error(state, "--pin-path must be an absolute path");
		c->pin_path = arg;
		break;
	case 'j':
		c->json = true;
		eg_json_errors = true;
		break;
	case 'v':
		c->verbose = true;
		eg_verbose = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp cli_common_argp = { common_options, common_parse, NULL, NULL, NULL, NULL, NULL };

static const struct argp_option pin_options[] = {
	{ "pin-path", 'p', "DIR", 0, "The daemon to talk to, by its pin directory (default " EG_PIN_PATH_DEFAULT ")", -1 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's debug output", -1 },
	{},
};

const struct argp cli_pin_argp = { pin_options, common_parse, NULL, NULL, NULL, NULL, NULL };

static error_t no_args_parse(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, state->input);
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int cli_parse_no_args(int argc, char **argv, const char *doc, struct cli_common *ret)
{
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 }, {} };
	struct argp argp = { NULL, no_args_parse, NULL, doc, children, NULL, NULL };

	return argp_parse(&argp, argc, argv, 0, NULL, ret) ? EXIT_USAGE : 0;
}

int cli_write(struct sbuf *b)
{
	if (b->oom) {
		p_err("out of memory");
		return 1;
	}
	if (fwrite(b->data, 1, b->len, stdout) != b->len || fflush(stdout)) {
		p_err("writing the output failed: %s", strerror(errno));
		return 1;
	}
	return 0;
}

json_t *cli_call(const struct cli_common *c, const char *request, int *ret_rc)
{
	json_t *reply = NULL;
	char err[1024];
	int rc;

	rc = ctl_call(c->pin_path, request, &reply, err, sizeof(err));
	if (rc) {
		json_decref(reply);
		p_err("%s", err);
		*ret_rc = (rc == -ENOENT || rc == -ECONNREFUSED) ? EXIT_NO_DAEMON : 1;
		return NULL;
	}
	*ret_rc = 0;
	return reply;
}
