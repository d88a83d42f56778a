// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * static_asuser UID PROG ARGS...: runs PROG as UID (and group UID, no
 * supplementary groups), for the VM guest, whose busybox setpriv cannot.
 * Static: the guest has only what the VM suite copies in.
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long id;
	char *end;

	if (argc < 3) {
		fprintf(stderr, "usage: static_asuser UID PROG [ARGS...]\n");
		return 2;
	}
	id = strtoul(argv[1], &end, 10);
	if (*end || end == argv[1]) {
		fprintf(stderr, "static_asuser: %s: not a uid\n", argv[1]);
		return 2;
	}
	if (setgroups(0, NULL) || setgid((gid_t)id) || setuid((uid_t)id)) {
		perror("static_asuser");
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
