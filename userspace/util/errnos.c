// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* errno values by their names, as records and messages spell them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "util/errnos.h"

/* ENOTSUPP is the kernel's own (524), which glibc does not name. */
#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

const char *eg_errno_name(int err, char *buf, size_t size)
{
	const char *name;

	if (err < 0)
		err = -err;
	if (err == ENOTSUPP)
		return "ENOTSUPP";
	name = strerrorname_np(err);
	if (name)
		return name;
	snprintf(buf, size, "E%d", err);
	return buf;
}

const char *errno_name(int err)
{
	static __thread char buf[16];

	return eg_errno_name(err, buf, sizeof(buf));
}
