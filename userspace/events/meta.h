/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The records that are not execs: daemon (start, stop, policy, rotated...),
 * lost, approval. Each is one JSON line written through jsonw into an
 * output buffer: meta_open() writes {"v":1,"type":...,"time":...; the
 * caller adds fields and meta_close() ends the line.
 */
#ifndef EG_META_H
#define EG_META_H

#include "events/output.h"
#include "util/jsonw.h"

void meta_open(struct jsonw *w, struct sbuf *b, const char *type);
/* A "daemon" record with "event":event. */
void meta_open_daemon(struct jsonw *w, struct sbuf *b, const char *event);
void meta_close(struct jsonw *w, struct eg_output *out);

#endif
