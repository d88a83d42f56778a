/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The output's rotated files (rotated.c): named, compressed, recovered, pruned. */
#ifndef EG_ROTATED_H
#define EG_ROTATED_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

/* path's directory into dir ("." when it has none); its base name. */
const char *rotated_dir(const char *path, char *dir, size_t len);
/* A free name for path's next rotated file: path.20260119T143000.123Z, after the newest there. */
void rotated_name(const char *path, char *buf, size_t len);
/* path (a rotated file) into path.gz, then path removed; gid: the .gz's group ((gid_t)-1: root's). */
void rotated_compress(const char *path, gid_t gid);
/* What a compressor killed with its daemon left: finished (the newest keep generations); *stop ends it early. */
void rotated_recover(const char *path, unsigned int keep, gid_t gid, atomic_bool *stop);
/* The oldest rotated files of path go until keep are left. */
void rotated_prune(const char *path, unsigned int keep);

#endif
