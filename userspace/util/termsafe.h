/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A record's or a request's strings shown to a person: no byte a terminal
 * acts on goes out raw. What an agent controls (an exec's file name and
 * arguments, a command line) would otherwise redraw what the person sees.
 */
#ifndef EG_UTIL_TERMSAFE_H
#define EG_UTIL_TERMSAFE_H

#include <stddef.h>
#include "util/sbuf.h"

/*
 * The bytes at s a terminal would act on, 0 for none: a C0 control, DEL, or
 * a C1 control (U+0080-U+009F, c2 80..c2 9f in UTF-8: U+009B is CSI). A
 * record's strings are valid UTF-8 once parsed, as the daemon's table
 * (events/format.c) sees them.
 */
size_t eg_control_len(const char *s);
/* Puts s with its control characters as \xNN. */
void eg_put_safe(struct sbuf *b, const char *s);
/* An argument as a shell would need it typed, its control characters as \xNN. */
void eg_put_arg(struct sbuf *b, const char *s);
/* s as eg_put_safe() puts it, in buf (cut to len); NULL for NULL. */
const char *eg_term_safe(const char *s, char *buf, size_t len);

#endif
