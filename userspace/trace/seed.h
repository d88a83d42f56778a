/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Changes to a running process's task storage, made in the kernel (bpf/seed.bpf.c). */
#ifndef EG_TRACE_SEED_H
#define EG_TRACE_SEED_H

#include <stdint.h>
#include <sys/types.h>
#include "execgate.h"

struct task_seeder;

/* Loads the iterator on tasks_fd ("tasks"). 0 or -errno (the kernel refused it). */
int task_seeder_open(int tasks_fd, struct task_seeder **ret);
void task_seeder_close(struct task_seeder *sd);
/*
 * Makes the change s asks in the storage of the process pidfd names (its
 * leader's), writing only the fields asked: nothing the task's own
 * programs wrote is put back. s->result says what came of it (0: no such
 * process). One caller at a time. 0, or -errno when the kernel refused
 * to run the iterator (nothing changed).
 */
int task_seeder_apply(struct task_seeder *sd, int pidfd, struct eg_seed *s);
/*
 * The depth of pid's current image set to depth, looked at again and
 * asked again if an exec made meanwhile undid it. 0, -ESRCH, -EAGAIN, or
 * another -errno.
 */
int task_seeder_set_depth(struct task_seeder *sd, int tasks_fd, pid_t pid, int depth);

#endif
