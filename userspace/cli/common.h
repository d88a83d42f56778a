/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What every verb shares: -p/--pin-path (which daemon), -j/--json (machine
 * output, errors as {"error":...}) and -v. A verb adds cli_common_argp as an
 * argp child whose input is its struct cli_common.
 */
#ifndef EG_CLI_COMMON_H
#define EG_CLI_COMMON_H

#include <argp.h>
#include <stdbool.h>
#include <jansson.h>
#include "util/sbuf.h"

#define EXIT_USAGE 2

struct cli_common {
	const char *pin_path;		/* as given; NULL: the default */
	bool json;
	bool verbose;
};

extern const struct argp cli_common_argp;	/* -p, -j, -v */
extern const struct argp cli_pin_argp;		/* -p, -v (verbs without --json) */

/* Hands the common struct to the child parser; call from ARGP_KEY_INIT. */
#define CLI_COMMON_INIT(state, common) ((state)->child_inputs[0] = (common))

/*
 * Parses the command line of a verb that takes the common options and no
 * argument (status, stats, metrics, unload, policy reload): doc is its
 * --help text. 0, or EXIT_USAGE after argp's message.
 */
int cli_parse_no_args(int argc, char **argv, const char *doc, struct cli_common *ret);

/* Writes b to stdout; p_err and 1 on failure. */
int cli_write(struct sbuf *b);

/*
 * A request to the daemon of c->pin_path that prints its error (one line,
 * "execgate VERB: ...") and returns NULL when it fails; *ret_rc gets the
 * exit status to use (1).
 */
json_t *cli_call(const struct cli_common *c, const char *request, int *ret_rc);
#define EXIT_NO_DAEMON 1
/*
 * status, stats, metrics: the LSB's codes for a service's status. 3 when
 * no daemon runs (what it left pinned is still shown), 4 when one holds the
 * socket but does not answer.
 */
#define EXIT_NOT_RUNNING 3
#define EXIT_NOT_ANSWERING 4

#endif
