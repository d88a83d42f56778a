/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Pieces of the text view that the tree shares (query/text.c). */
#ifndef EG_QUERY_VIEW_H
#define EG_QUERY_VIEW_H

#include <jansson.h>
#include "util/sbuf.h"

const char *view_user(const json_t *r, char *buf, size_t len);
/* The record's time in local time, to the millisecond. */
void view_time(const json_t *r, char *buf, size_t len);
void view_command(struct sbuf *b, const json_t *r);
void view_exit(struct sbuf *b, const json_t *x);
/* Cuts what was added from start to width columns, with a '+' (0: no limit). */
void view_fit(struct sbuf *b, size_t start, unsigned int width);

#endif
