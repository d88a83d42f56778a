/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef EG_VERSION_H
#define EG_VERSION_H
#define EG_VERSION "0.1.0"
#define EG_SCHEMA_VERSION 1
#endif
