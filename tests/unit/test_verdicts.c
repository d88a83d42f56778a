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

/* The clock of the tests: each verdict is issued, and each record made, ten ticks after the one before
 * (an exec's record is made a tick after its verdict's ticket: issued + 1) */
static uint64_t clk = 1000;

/* A verdict issued now (its ticket's time), as the supervisor gives it; the time */
static uint64_t put(struct eg_sessions *s, uint32_t tid, uint32_t session, const char *decision, const char *action,
		    const char *rule, const char *message, uint64_t dev, uint64_t ino)
{
	clk += 10;
	verdict_put(s, tid, session, decision, action, rule, message, NULL, dev, ino, clk);
	return clk;
}

/* The record of an exec made at time t (0: now) */
static bool held;	/* records may be held back (hold.c) */

static bool annotate_at(struct eg_sessions *s, uint32_t tid, uint32_t type, uint64_t ino, uint64_t t,
			struct eg_annotation *a)
{
	struct eg_event h = { .type = type, .tid = tid, .session = SESSION, .dev = 1, .ino = ino,
			      .ktime_ns = t ? t : (clk += 10) };

	return sessions_annotate(s, &h, a, held);
}

static bool annotate(struct eg_sessions *s, uint32_t tid, uint32_t type, uint64_t ino,
		     struct eg_annotation *a)
{
	return annotate_at(s, tid, type, ino, 0, a);
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
	uint64_t failed_at[THREADS], exec_at[THREADS];
	int wrong = 0, missing = 0;

	if (!ASSERT_TRUE(s, "table"))
		return;
	for (t = base; t < base + THREADS; t++) {
		failed_at[t - base] = put(s, t, SESSION, "allow", "allowed", NULL, NULL, 1, 1000 + t) + 1;
		exec_at[t - base] = put(s, t, SESSION, "audit", "audited", "audit-true", "true was run", 1,
					TRUE_INO) + 1;
	}
	for (t = base; t < base + THREADS; t++) {
		if (!annotate_at(s, t, EG_EVENT_EXEC_FAILED, 0, failed_at[t - base], &a))
			missing++;
		else if (strcmp(a.decision, "allow") || a.rule)
			wrong++;
		if (!annotate_at(s, t, EG_EVENT_EXEC, TRUE_INO, exec_at[t - base], &a))
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

/* An exec record passes over a verdict for another file: that exec left no record. */
static void test_exec_skips_unrecorded(void)
{
	struct eg_sessions *s = table();
	struct eg_annotation a;

	if (!ASSERT_TRUE(s, "table"))
		return;
	put(s, 42, SESSION, "allow", "allowed", NULL, NULL, 1, 500);
	put(s, 42, SESSION, "audit", "audited", "audit-true", NULL, 1, TRUE_INO);
	ASSERT_TRUE(annotate(s, 42, EG_EVENT_EXEC, TRUE_INO, &a), "matched");
	ASSERT_STREQ(a.rule, "audit-true", "its own file's verdict");
	/* another session's thread with the same tid is another thread */
	put(s, 43, SESSION + 1, "allow", "allowed", NULL, NULL, 1, TRUE_INO);
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
	uint64_t failed_at;

	if (!ASSERT_TRUE(s, "table"))
		return;
	put(s, 7, SESSION, "deny", "blocked", "no-net", NULL, 0, 0);
	failed_at = put(s, 7, SESSION, "allow", "allowed", NULL, NULL, 0, 0) + 1;
	put(s, 7, SESSION, "error", "blocked", NULL, NULL, 0, 0);
	put(s, 7, SESSION, "audit", "audited", "audit-true", NULL, 1, TRUE_INO);
	ASSERT_TRUE(annotate_at(s, 7, EG_EVENT_EXEC_FAILED, 0, failed_at, &a), "failed exec matched");
	ASSERT_STREQ(a.decision, "allow", "the allowed one, not the refusal before it");
	ASSERT_TRUE(annotate(s, 7, EG_EVENT_EXEC, TRUE_INO, &a), "exec matched");
	ASSERT_STREQ(a.rule, "audit-true", "its own");
	ASSERT_FALSE(annotate(s, 7, EG_EVENT_EXEC_FAILED, 0, &a), "no refusal left to take");
	table_free(s);
}

/*
 * A verdict whose record never comes (a failed exec with --exec-failed=none,
 * or its record lost) is no later exec's: the next exec of the same file
 * by the same thread, allowed by another rule, gets its own verdict, not
 * the stale one (which the oldest-first match gave it, and then left the
 * exec's own to the exec after). A record read out of its order (a loader's
 * exec, held for its program's record: hold.c) still finds its own.
 */
static void test_a_verdict_whose_record_never_came(void)
{
	struct eg_sessions *s = table();
	struct eg_annotation a;
	uint64_t t1, t2, loader_at, after_at;

	if (!ASSERT_TRUE(s, "table"))
		return;
	put(s, 9, SESSION, "approval", "approved", "ask-true", NULL, 1, TRUE_INO);	/* failed, no record */
	t1 = put(s, 9, SESSION, "audit", "audited", "audit-true", NULL, 1, TRUE_INO);
	ASSERT_TRUE(annotate_at(s, 9, EG_EVENT_EXEC, TRUE_INO, t1 + 1, &a), "the exec's record");
	ASSERT_STREQ(a.decision, "audit", "its own verdict, not the stale approval");
	ASSERT_STREQ(a.rule, "audit-true", "its own rule");
	/* a failed exec let through (no file), its record not reported; then a failed one that is */
	put(s, 9, SESSION, "allow", "allowed", NULL, NULL, 0, 0);
	t2 = put(s, 9, SESSION, "deny", "blocked", "no-true", NULL, 0, 0);
	t2 = put(s, 9, SESSION, "audit", "audited", "audit-miss", NULL, 0, 0);
	ASSERT_TRUE(annotate_at(s, 9, EG_EVENT_EXEC_FAILED, 0, t2 + 1, &a), "the failed exec's record");
	ASSERT_STREQ(a.rule, "audit-miss", "its own, not the older let-through");
	ASSERT_FALSE(annotate(s, 9, EG_EVENT_EXEC_FAILED, 0, &a), "the older ones that only a failed record takes went");
	/* a loader's exec record, held; the loaded program's exec is read first */
	held = true;
	loader_at = put(s, 11, SESSION, "allow", "allowed", "loader", NULL, 1, 600) + 1;
	after_at = put(s, 11, SESSION, "audit", "audited", "audit-true", NULL, 1, TRUE_INO) + 1;
	ASSERT_TRUE(annotate_at(s, 11, EG_EVENT_EXEC, TRUE_INO, after_at, &a), "the later exec, read first");
	ASSERT_STREQ(a.rule, "audit-true", "the later exec's own");
	ASSERT_TRUE(annotate_at(s, 11, EG_EVENT_EXEC, 600, loader_at, &a), "the held loader's record");
	ASSERT_STREQ(a.rule, "loader", "the held record's own");
	held = false;
	/* a verdict issued after a record is not the record's */
	put(s, 12, SESSION, "allow", "allowed", NULL, NULL, 1, TRUE_INO);
	ASSERT_FALSE(annotate_at(s, 12, EG_EVENT_EXEC, TRUE_INO, clk - 1, &a), "issued after the record");
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
	uint64_t *first = calloc(n, sizeof(*first));
	int wrong = 0, missing = 0;

	if (!ASSERT_TRUE(s && first, "table"))
		return;
	ASSERT_EQ(s->nverdicts, VERDICTS_MIN, "starts small");
	for (t = base; t < base + n; t++) {
		first[t - base] = put(s, t, SESSION, "allow", "allowed", NULL, NULL, 1, 1000 + t) + 1;
		put(s, t, SESSION, "audit", "audited", "audit-true", "true was run", 1, TRUE_INO);
	}
	ASSERT_TRUE(s->nverdicts >= 2 * n && s->nverdicts <= VERDICTS_MAX, "grown for 12,000");
	for (t = base; t < base + n; t++) {
		if (!annotate_at(s, t, EG_EVENT_EXEC, 1000 + t, first[t - base], &a))
			missing++;
		else if (strcmp(a.decision, "allow") || a.rule)
			wrong++;
		if (!annotate(s, t, EG_EVENT_EXEC, TRUE_INO, &a))
			missing++;
		else if (strcmp(a.decision, "audit") || !a.rule || strcmp(a.rule, "audit-true") ||
			 !a.message || strcmp(a.message, "true was run"))
			wrong++;
	}
	free(first);
	ASSERT_EQ(missing, 0, "records without their verdict after growing");
	put(s, 4, SESSION, "allow", "allowed", NULL, NULL, 1, TRUE_INO);
	verdicts_shrink(s);
	ASSERT_TRUE(s->nverdicts > VERDICTS_MIN, "not while one waits");
	ASSERT_TRUE(annotate(s, 4, EG_EVENT_EXEC, TRUE_INO, &a), "the one that waited");
	ASSERT_EQ(wrong, 0, "records with another exec's verdict after growing");
	verdicts_shrink(s);
	ASSERT_EQ(s->nverdicts, VERDICTS_MIN, "back to its first size");
	put(s, 5, SESSION, "allow", "allowed", NULL, NULL, 1, TRUE_INO);
	ASSERT_TRUE(annotate(s, 5, EG_EVENT_EXEC, TRUE_INO, &a), "usable after shrinking");
	table_free(s);
}

int main(void)
{
	RUN(test_table_grows_and_shrinks);
	RUN(test_failed_exec_skips_refusals);
	RUN(test_burst_of_consecutive_tids);
	RUN(test_exec_skips_unrecorded);
	RUN(test_a_verdict_whose_record_never_came);
	return UNIT_DONE();
}
