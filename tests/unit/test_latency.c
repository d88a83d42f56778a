// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The supervisor's latency histogram: buckets cover every value once, in order. */
#include "unit.h"
#include "session/internal.h"

static void test_small_values_are_exact(void)
{
	uint64_t us;

	for (us = 0; us < 16; us++) {
		ASSERT_EQ(latency_bucket(us), us, "bucket of a value below 16");
		ASSERT_EQ(latency_bucket_low(latency_bucket(us)), us, "its low end");
	}
}

static void test_buckets_contain_their_values(void)
{
	uint64_t us, prev = 0;
	unsigned int b;

	for (us = 16; us < (1ull << 31); us += us / 7 + 1) {
		b = latency_bucket(us);
		if (!ASSERT_TRUE(b < LATENCY_BUCKETS, "bucket in range"))
			return;
		ASSERT_TRUE(latency_bucket_low(b) <= us, "low end at or below the value");
		if (b + 1 < LATENCY_BUCKETS)
			ASSERT_TRUE(latency_bucket_low(b + 1) > us, "next bucket starts above the value");
		ASSERT_TRUE(b >= prev, "buckets grow with the value");
		/* 8 buckets per power of two: at most 1/8 of the value wide */
		if (b + 1 < LATENCY_BUCKETS)
			ASSERT_TRUE((latency_bucket_low(b + 1) - latency_bucket_low(b)) * 8 <= us,
				    "bucket width");
		prev = b;
	}
	ASSERT_EQ(latency_bucket(1ull << 40), LATENCY_BUCKETS - 1, "huge values go to the last bucket");
}

int main(void)
{
	RUN(test_small_values_are_exact);
	RUN(test_buckets_contain_their_values);
	return UNIT_DONE();
}
