/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A small test harness in the manner of the kernel's test_progs: each test is
 * a function, assertions print expected vs actual and return bool, a test
 * passes when none of its assertions failed. Output, one line a test:
 *   PASS name | FAIL name | SKIP name: reason
 * and a closing "N passed, N failed, N skipped" line; exit 1 on any failure.
 */
#ifndef EG_UNIT_H
#define EG_UNIT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_passed, unit_failed, unit_skipped;
static int unit_cur_failed;
static const char *unit_cur_skip;

static inline void unit_failf(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static inline void unit_failf(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	unit_cur_failed++;
	fprintf(stdout, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

#define ASSERT_TRUE(cond, what) ({					\
	bool __ok = !!(cond);						\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: expected true", what); \
	__ok; })
#define ASSERT_FALSE(cond, what) ({					\
	bool __ok = !(cond);						\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: expected false", what); \
	__ok; })
#define ASSERT_EQ(actual, expected, what) ({				\
	long long __a = (long long)(actual), __e = (long long)(expected); \
	bool __ok = __a == __e;						\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: expected %lld, got %lld", what, __e, __a); \
	__ok; })
#define ASSERT_NEQ(actual, unexpected, what) ({				\
	long long __a = (long long)(actual), __e = (long long)(unexpected); \
	bool __ok = __a != __e;						\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: got unexpected %lld", what, __a); \
	__ok; })
#define ASSERT_OK(rc, what) ({						\
	long long __r = (long long)(rc);				\
	bool __ok = __r == 0;						\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: expected 0, got %lld", what, __r); \
	__ok; })
#define ASSERT_ERR(rc, what) ({						\
	long long __r = (long long)(rc);				\
	bool __ok = __r < 0;						\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: expected an error, got %lld", what, __r); \
	__ok; })
#define ASSERT_OK_PTR(p, what) ({					\
	bool __ok = (p) != NULL;					\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: expected a pointer, got NULL", what); \
	__ok; })
#define ASSERT_STREQ(actual, expected, what) ({				\
	const char *__a = (actual), *__e = (expected);			\
	bool __ok = __a && __e && !strcmp(__a, __e);			\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: expected \"%s\", got \"%s\"", what, \
			   __e ? __e : "(null)", __a ? __a : "(null)");	\
	__ok; })
#define ASSERT_MEMEQ(actual, expected, n, what) ({			\
	bool __ok = !memcmp((actual), (expected), (n));			\
	if (!__ok)							\
		unit_failf(__FILE__, __LINE__, "%s: %zu bytes differ", what, (size_t)(n)); \
	__ok; })

/* Marks the running test skipped (counted as skipped, never as passed). */
#define SKIP(reason) do { unit_cur_skip = (reason); return; } while (0)

#define RUN(fn) do {							\
	unit_cur_failed = 0;						\
	unit_cur_skip = NULL;						\
	fn();								\
	if (unit_cur_failed) {						\
		unit_failed++;						\
		printf("FAIL %s\n", #fn);				\
	} else if (unit_cur_skip) {					\
		unit_skipped++;						\
		printf("SKIP %s: %s\n", #fn, unit_cur_skip);		\
	} else {							\
		unit_passed++;						\
		printf("PASS %s\n", #fn);				\
	}								\
	fflush(stdout);							\
} while (0)

#define UNIT_DONE() ({							\
	printf("%d passed, %d failed, %d skipped\n", unit_passed, unit_failed, unit_skipped); \
	unit_failed ? 1 : 0; })

#endif
