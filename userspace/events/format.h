/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Rendering of events: JSON lines (schema v1, docs/events.md) and a terminal table. */
#ifndef EG_FORMAT_H
#define EG_FORMAT_H

#include <stdint.h>
#include "trace/record.h"
#include "util/sbuf.h"

/* What the policy said about an exec; NULL fields are left out (rule: null). */
struct eg_annotation {
	const char *decision;
	const char *rule;		/* NULL: the default decision */
	const char *message;
	const char *action;
};

/* CLOCK_BOOTTIME -> CLOCK_REALTIME, sampled at start and refreshed per batch. */
int64_t clock_boot_to_real(void);
uint64_t clock_real_ns(void);
/* 2026-01-19T14:30:00.123456789Z */
void format_time(struct sbuf *b, uint64_t real_ns);

/* One JSON line (with '\n') for an exec or exec_failed record. */
void format_record_json(struct sbuf *b, const struct eg_record *r, int64_t boot_to_real,
			const struct eg_annotation *a);
/* One line of the terminal table, and its header. */
void format_record_text(struct sbuf *b, const struct eg_record *r, int64_t boot_to_real,
			const struct eg_annotation *a);
void format_text_header(struct sbuf *b);
/* Opens a JSON record {"v":1,"type":TYPE,"time":...; the caller adds fields and "}\n". */
void format_json_open(struct sbuf *b, const char *type, uint64_t real_ns);
/* "ENOENT" for 2 (or -2), "E<n>" when unnamed; the result may live in buf. */
const char *eg_errno_name(int err, char *buf, size_t size);
/* The same with a per-thread buffer. */
const char *errno_name(int err);

#endif
