/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Changes to a running process's task storage, made in the kernel (bpf/amend.bpf.c). */
#ifndef EG_TRACE_AMEND_H
#define EG_TRACE_AMEND_H

#include <stdint.h>
#include <sys/types.h>
#include "execgate.h"

struct task_amender;

/*
 * Loads the iterator on tasks_fd ("tasks") and runs it once on this
 * process. 0 or -errno (the kernel refused it: -EOPNOTSUPP before 6.1 in
 * a pid namespace of its own).
 */
int task_amender_open(int tasks_fd, struct task_amender **ret);
void task_amender_close(struct task_amender *sd);
/*
 * Makes the change s asks in the storage of process pid, which pidfd
 * names, in each of its threads (a session id: in its leader), writing
 * only the fields asked: nothing the task's own programs wrote is put
 * back. With s->exec_ktime, only on that image (else EG_AMEND_CHANGED).
 * s->result says what came of it in the leader, the process's entry (0: no
 * such process); s->missed counts the other threads that have no storage
 * and got none. One caller at a time. 0, or -errno when the kernel refused
 * to run the iterator (nothing changed).
 */
int task_amender_apply(struct task_amender *sd, int pidfd, pid_t pid, struct eg_amend *s);
/*
 * s->task made from a process's entry t as a clone would copy it (what a
 * thread with no storage gets); the caller then writes the change in it.
 */
void task_amend_inherit(struct eg_amend *s, const struct eg_task *t);
/*
 * The depth of pid's current image set to depth, in every thread, looked
 * at again and asked again if an exec made meanwhile undid it. 0, -ESRCH,
 * -EAGAIN, -ENOMEM (a thread got no storage), or another -errno.
 */
int task_amender_set_depth(struct task_amender *sd, int tasks_fd, pid_t pid, int depth);

#endif
