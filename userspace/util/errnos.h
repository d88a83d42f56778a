/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* errno values by their names ("ENOENT"), for records and messages. */
#ifndef EG_UTIL_ERRNOS_H
#define EG_UTIL_ERRNOS_H

#include <stddef.h>

/* "ENOENT" for 2 (or -2), "E<n>" when unnamed; the result may live in buf. */
const char *eg_errno_name(int err, char *buf, size_t size);
/* The same with a per-thread buffer. */
const char *errno_name(int err);

#endif
