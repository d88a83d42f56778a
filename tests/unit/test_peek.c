// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Reading an exec's path and argv from a task's memory (session/peek.c),
 * this process's own, with process_vm_readv, which reads whole pages:
 * every string whole and exact across a page boundary, each request's
 * bytes as they are at that request, and a string in a page that is not
 * mapped an EFAULT, as the kernel's own copy would give.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "unit.h"
#include "execgate.h"
#include "session/internal.h"

#define PG 4096

struct got {
	char path[256];
	char **argv;
	unsigned int argc;
	uint64_t bytes;
	bool path_trunc, argv_trunc;
	int rc;
};

static void peek(const char *path, char *const *argv, struct got *g)
{
	memset(g, 0, sizeof(*g));
	g->rc = peek_exec_args(gettid(), (uint64_t)(uintptr_t)path, g->path, sizeof(g->path), &g->path_trunc,
			       (uint64_t)(uintptr_t)argv, 64, 65536, &g->argv, &g->argc, &g->bytes,
			       &g->argv_trunc);
}

static void got_free(struct got *g)
{
	if (!g->rc)
		strv_free(g->argv, g->argc);
}

/* Three pages: strings placed so that one crosses from the first page into the second. */
static char *region(void)
{
	char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static bool same_argv(const struct got *g, char *const *want, unsigned int n)
{
	unsigned int i;

	if (g->rc || g->argc != n)
		return false;
	for (i = 0; i < n; i++)
		if (strcmp(g->argv[i], want[i]))
			return false;
	return !g->argv[n];
}

static void test_strings_across_pages_as_they_are_now(void)
{
	char *m = region(), *n = region();
	char *argv1[4], *argv2[4];
	struct got g;
	unsigned int round;

	if (!ASSERT_TRUE(m && n, "mmap"))
		return;
	strcpy(m, "/bin/first");
	/* "crossing-..." starts 5 bytes before the end of the first page */
	strcpy(m + PG - 5, "crossing-the-page");
	strcpy(m + PG + 100, "second");
	argv1[0] = m + PG - 5;
	argv1[1] = m + PG + 100;
	argv1[2] = m;
	argv1[3] = NULL;
	/* twice: nothing of the first read is kept for the second */
	for (round = 0; round < 2; round++) {
		peek(m, argv1, &g);
		ASSERT_OK(g.rc, "read");
		ASSERT_STREQ(g.path, "/bin/first", "path");
		ASSERT_TRUE(same_argv(&g, argv1, 3), "argv whole, across the page");
		ASSERT_EQ(g.bytes, (uint64_t)(18 + 7 + 11), "bytes");
		got_free(&g);
	}

	/* the first strings' pages gone: others elsewhere, one across the second and third page */
	strcpy(n + 2 * PG - 3, "xyz-past-the-end");
	strcpy(n + 10, "/bin/other");
	argv2[0] = n + 10;
	argv2[1] = n + 2 * PG - 3;
	argv2[2] = NULL;
	munmap(m, 3 * PG);
	peek(n + 10, argv2, &g);
	ASSERT_OK(g.rc, "read after the first pages went");
	ASSERT_STREQ(g.path, "/bin/other", "path after");
	ASSERT_TRUE(same_argv(&g, argv2, 2), "argv after");
	got_free(&g);

	/* the same pages with other bytes: what is read is what is there now */
	strcpy(n + 2 * PG - 3, "new");
	peek(n + 10, argv2, &g);
	ASSERT_OK(g.rc, "read again");
	ASSERT_STREQ(g.argv[1], "new", "the page as it is now, not as it was");
	got_free(&g);

	/* a pointer into a page that is not mapped any more: EFAULT, as the kernel would say */
	argv2[1] = m + PG + 100;
	peek(n + 10, argv2, &g);
	ASSERT_EQ(g.rc, -EFAULT, "a string in an unmapped page");
	munmap(n, 3 * PG);
}

int main(void)
{
	RUN(test_strings_across_pages_as_they_are_now);
	return UNIT_DONE();
}
