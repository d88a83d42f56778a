/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One daemon per pin path: the daemon holds an flock on
 * /run/execgate/<name>.pid (name derived from the pin path) and writes its
 * pid there. Other commands find the daemon through the same file.
 */
#ifndef EG_PIDFILE_H
#define EG_PIDFILE_H

#include <stddef.h>
#include <sys/types.h>

#define EG_RUN_DIR "/run/execgate"
#define EG_PIN_PATH_DEFAULT "/sys/fs/bpf/execgate"

/* The pid file for a pin path (NULL: the default pin path). */
int pidfile_path(const char *pin_path, char *buf, size_t len);
/* Takes the lock and writes our pid; -EBUSY (and *ret_pid) if another daemon holds it. */
int pidfile_acquire(const char *path, int *ret_fd, pid_t *ret_pid);
/* The pid of the daemon holding the lock, or -ESRCH if none runs. */
int pidfile_read(const char *path, pid_t *ret_pid);
void pidfile_release(const char *path, int fd);

#endif
