/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* One run of a BPF task iterator that prints nothing (trace/migrate.c, trace/amend.c). */
#ifndef EG_TRACE_ITER_H
#define EG_TRACE_ITER_H

#include <bpf/libbpf.h>

/*
 * Attaches prog (on what li names; NULL: every task), reads its iterator
 * to the end (each read runs it over the next tasks), detaches. 0 or -errno.
 */
int iter_run_once(struct bpf_program *prog, union bpf_iter_link_info *li);

#endif
