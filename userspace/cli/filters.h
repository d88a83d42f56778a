/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* --since, --until, --type, --user, --comm, ... for the verbs that read records (cli/filters.c). */
#ifndef EG_CLI_FILTERS_H
#define EG_CLI_FILTERS_H

#include <argp.h>
#include "query/query.h"

struct cli_filters {
	struct query_filter f;
	const char *since_arg;		/* --since as given, NULL if none */
};

/* An argp child whose input is a struct cli_filters. */
extern const struct argp cli_filter_argp;

#endif
