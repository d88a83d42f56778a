/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Parsing of sizes given on the command line ("64K", "16M", "4096"). */
#ifndef EG_UNITS_H
#define EG_UNITS_H

#include <stdint.h>

/* Decimal bytes with an optional K/M/G suffix (powers of 1024); -EINVAL or -ERANGE. */
int parse_size(const char *s, uint64_t *ret);

#endif
