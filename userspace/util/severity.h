/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A rule's severity (policy `severity:`), as events carry it and --min-severity filters by it. */
#ifndef EG_SEVERITY_H
#define EG_SEVERITY_H

#include <string.h>

enum eg_severity {
	EG_SEV_NONE = 0,		/* the rule says none: below info for --min-severity */
	EG_SEV_INFO,
	EG_SEV_LOW,
	EG_SEV_MEDIUM,
	EG_SEV_HIGH,
	EG_SEV_CRITICAL,
	EG_SEV__COUNT,
};

static inline const char *eg_severity_name(int s)
{
	static const char *const names[EG_SEV__COUNT] = { NULL, "info", "low", "medium", "high", "critical" };

	return s > 0 && s < EG_SEV__COUNT ? names[s] : NULL;
}

/* "info" .. "critical" -> 1..5; 0 when s names none. */
static inline int eg_severity_parse(const char *s)
{
	int i;

	for (i = 1; i < EG_SEV__COUNT; i++)
		if (!strcmp(s, eg_severity_name(i)))
			return i;
	return 0;
}

#endif
