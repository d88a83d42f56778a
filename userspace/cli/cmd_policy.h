/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * execgate policy's verbs (cmd_policy.c: check and the verb table;
 * cmd_policy_test.c: test, reload; cmd_policy_gen.c: generate) and what
 * they share.
 */
#ifndef EG_CLI_CMD_POLICY_H
#define EG_CLI_CMD_POLICY_H

#include <stdbool.h>
#include "policy/policy.h"
#include "util/sbuf.h"

void policy_put_json_str(struct sbuf *b, const char *s);
/* b to stdout, whole. */
void policy_write_out(struct sbuf *b);
/* The errors (or the warnings) of a load, one a line on stderr. */
void policy_print_diags_plain(const struct eg_diags *d, bool warnings);
void policy_put_diags_json(struct sbuf *b, const struct eg_diags *d, bool warnings);

int do_test(int argc, char **argv);
int do_reload(int argc, char **argv);
int do_generate(int argc, char **argv);

#endif
