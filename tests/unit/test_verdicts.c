// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A session's verdicts wait for the tracer's records of their execs: each
 * record must get the verdict of its own exec, also when many threads with
 * consecutive tids have verdicts waiting at once (a burst of forks the
 * daemon has not read the records of yet).
 */
#include <stdlib.h>
#include <string.h>
#include "unit.h"
#include "execgate.h"
#include "session/internal.h"

#define SESSION 0x5e55
#define THREADS 200
#define TRUE_INO 7

static struct eg_sessions *table(void)
{
	struct eg_sessions *s = calloc(1, sizeof(*s));

	if (s && verdicts_init(s)) {
		free(s);
		s = NULL;
	}
	return s;
}

static void table_free(struct eg_sessions *s)
{
	verdicts_free(s);
	sbuf_free(&s->ann_rule);
	sbuf_free(&s->ann_msg);
	free(s);
}

static bool annotate(struct eg_sessions *s, uint32_t tid, uint32_t type, uint64_t ino,
		     struct eg_annotation *a)
{
	struct eg_event h = { .type = type, .tid = tid, .session = SESSION, .dev = 1, .ino = ino };

	return sessions_annotate(s, &h, a);
}

/*
 * Each thread: an exec of a file that then fails (allowed, no rule), then
 * an exec of "true" (audited by a rule); every verdict is given before any
 * record is read.
 */
static void test_burst_of_consecutive_tids(void)
{
	struct eg_sessions *s = table();
	struct eg_annotation a;
	uint32_t base = 18553, t;
	int wrong = 0, missing = 0;

	if (!ASSERT_TRUE(s, "table"))
		return;
	for (t = base; t < base + THREADS; t++) {
		verdict_put(s, t, SESSION, "allow", "allowed", NULL, NULL, NULL, 1, 1000 + t);
		verdict_put(s, t, SESSION, "audit", "audited", "audit-true", "true was run", NULL, 1,
			    TRUE_INO);
	}
	for (t = base; t < base + THREADS; t++) {
		if (!annotate(s, t, EG_EVENT_EXEC_FAILED, 0, &a))
			missing++;
		else if (strcmp(a.decision, "allow") || a.rule)
			wrong++;
		if (!annotate(s, t, EG_EVENT_EXEC, TRUE_INO, &a))
			missing++;
		else if (strcmp(a.decision, "audit") || !a.rule || strcmp(a.rule, "audit-true"))
			wrong++;
	}
	ASSERT_EQ(missing, 0, "records without their verdict");
	ASSERT_EQ(wrong, 0, "records with another exec's verdict");
	/* nothing is left over: a record of a later exec finds no stale verdict */
	ASSERT_FALSE(annotate(s, base, EG_EVENT_EXEC_FAILED, 0, &a), "all used");
	table_free(s);
}

/* An exec record skips (and drops) a verdict for another file: that exec left no record. */
static void test_exec_skips_unrecorded(void)
{
	struct eg_sessions *s = table();
	struct eg_annotation a;

	if (!ASSERT_TRUE(s, "table"))
		return;
	verdict_put(s, 42, SESSION, "allow", "allowed", NULL, NULL, NULL, 1, 500);
	verdict_put(s, 42, SESSION, "audit", "audited", "audit-true", NULL, NULL, 1, TRUE_INO);
	ASSERT_TRUE(annotate(s, 42, EG_EVENT_EXEC, TRUE_INO, &a), "matched");
	ASSERT_STREQ(a.rule, "audit-true", "its own file's verdict");
	ASSERT_FALSE(annotate(s, 42, EG_EVENT_EXEC_FAILED, 0, &a), "the skipped one is gone");
	/* another session's thread with the same tid is another thread */
	verdict_put(s, 43, SESSION + 1, "allow", "allowed", NULL, NULL, NULL, 1, TRUE_INO);
	ASSERT_FALSE(annotate(s, 43, EG_EVENT_EXEC, TRUE_INO, &a), "session must match");
	table_free(s);
}

/*
 * A refused exec has no record of the tracer (it never reached the
 * kernel): a failed exec's record passes over it to its own verdict.
 */
static void test_failed_exec_skips_refusals(void)
{
	struct eg_sessions *s = table();
	struct eg_annotation a;

	if (!ASSERT_TRUE(s, "table"))
		return;
	verdict_put(s, 7, SESSION, "deny", "blocked", "no-net", NULL, NULL, 0, 0);
	verdict_put(s, 7, SESSION, "allow", "allowed", NULL, NULL, NULL, 0, 0);
	verdict_put(s, 7, SESSION, "error", "blocked", NULL, NULL, NULL, 0, 0);
	verdict_put(s, 7, SESSION, "audit", "audited", "audit-true", NULL, NULL, 1, TRUE_INO);
	ASSERT_TRUE(annotate(s, 7, EG_EVENT_EXEC_FAILED, 0, &a), "failed exec matched");
	ASSERT_STREQ(a.decision, "allow", "the allowed one, not the refusal before it");
	ASSERT_TRUE(annotate(s, 7, EG_EVENT_EXEC, TRUE_INO, &a), "exec matched");
	ASSERT_STREQ(a.rule, "audit-true", "its own");
	ASSERT_FALSE(annotate(s, 7, EG_EVENT_EXEC_FAILED, 0, &a), "no refusal left to take");
	table_free(s);
}

/*
 * More verdicts waiting than the table starts with (a burst of 6,000
 * threads, two each, none read yet): the table grows, and every record
 * still gets its own verdict, rule and message included. Once none waits,
 * the table goes back to its first size.
 */
static void test_table_grows_and_shrinks(void)
{
	struct eg_sessions *s = table();
	struct eg_annotation a;
	uint32_t base = 300000, n = 6000, t;
	int wrong = 0, missing = 0;

	if (!ASSERT_TRUE(s, "table"))
		return;
	ASSERT_EQ(s->nverdicts, VERDICTS_MIN, "starts small");
	for (t = base; t < base + n; t++) {
		verdict_put(s, t, SESSION, "allow", "allowed", NULL, NULL, NULL, 1, 1000 + t);
		verdict_put(s, t, SESSION, "audit", "audited", "audit-true", "true was run", NULL, 1, TRUE_INO);
	}
	ASSERT_TRUE(s->nverdicts >= 2 * n && s->nverdicts <= VERDICTS_MAX, "grown for 12,000");
	for (t = base; t < base + n; t++) {
		if (!annotate(s, t, EG_EVENT_EXEC, 1000 + t, &a))
			missing++;
		else if (strcmp(a.decision, "allow") || a.rule)
			wrong++;
		if (!annotate(s, t, EG_EVENT_EXEC, TRUE_INO, &a))
			missing++;
		else if (strcmp(a.decision, "audit") || !a.rule || strcmp(a.rule, "audit-true") ||
			 !a.message || strcmp(a.message, "true was run"))
			wrong++;
	}
	ASSERT_EQ(missing, 0, "records without their verdict after growing");
	verdict_put(s, 4, SESSION, "allow", "allowed", NULL, NULL, NULL, 1, TRUE_INO);
	verdicts_shrink(s);
	ASSERT_TRUE(s->nverdicts > VERDICTS_MIN, "not while one waits");
	ASSERT_TRUE(annotate(s, 4, EG_EVENT_EXEC, TRUE_INO, &a), "the one that waited");
	ASSERT_EQ(wrong, 0, "records with another exec's verdict after growing");
	verdicts_shrink(s);
	ASSERT_EQ(s->nverdicts, VERDICTS_MIN, "back to its first size");
	verdict_put(s, 5, SESSION, "allow", "allowed", NULL, NULL, NULL, 1, TRUE_INO);
	ASSERT_TRUE(annotate(s, 5, EG_EVENT_EXEC, TRUE_INO, &a), "usable after shrinking");
	table_free(s);
}

int main(void)
{
	RUN(test_table_grows_and_shrinks);
	RUN(test_failed_exec_skips_refusals);
	RUN(test_burst_of_consecutive_tids);
	RUN(test_exec_skips_unrecorded);
	return UNIT_DONE();
}
