/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#include "api/internal.h"

const char api_page_html[] = "<!doctype html><title>execgate</title>";
