/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * `execgate policy generate`: a default-deny policy that allows what the
 * records show ran (a session, a tree, or what query filters select), and
 * nothing else. Programs by resolved path; the depths they ran at as
 * `context`; their argument lists, generalized where runs differ only in
 * file names or numbers (the examples in a comment); network and package
 * tools as `approval`; what was refused or killed as commented-out rules.
 */
#ifndef EG_GENERATE_H
#define EG_GENERATE_H

#include <jansson.h>
#include "util/sbuf.h"

struct eg_generate;

struct eg_generate *generate_new(void);
void generate_free(struct eg_generate *g);
/* One record (exec, exec_failed); the others are ignored. */
void generate_add(struct eg_generate *g, const json_t *r);
/* The policy, YAML; what says where it comes from goes in its first comment. -ENOENT: no exec seen. */
int generate_write(struct eg_generate *g, const char *source, struct sbuf *out);

/* One argument as a regex: literal, or its file name or number generalized (for tests). */
void generate_token(struct sbuf *b, const char *tok, bool generalize);

#endif
