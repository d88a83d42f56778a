// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * floor: loads the floor programs (floor.bpf.c), prints "ready" once they
 * are attached, and reads their ring buffer every 50 ms, throwing the
 * records away, until SIGTERM or SIGINT; then prints "lost=N" (records the
 * ring buffer had no room for). tools/bench/stages.py runs it between the
 * daemon's runs: what the programs cost comes from the kernel's run-time
 * statistics, not from here.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

static int discard(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

int main(void)
{
	struct ring_buffer *rb = NULL;
	struct floor_bpf *skel;
	sigset_t mask;
	int err, sfd = -1, ret = 1;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) || (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fprintf(stderr, "floor: signalfd: %s\n", strerror(errno));
		return 1;
	}
	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "floor: opening the floor programs: %s\n", strerror(errno));
		goto cleanup;
	}
	err = bpf_map__set_max_entries(skel->maps.floor_scratch, libbpf_num_possible_cpus());
	if (!err)
		err = floor_bpf__load(skel);
	if (err) {
		fprintf(stderr, "floor: loading the floor programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = floor_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "floor: attaching: %s\n", strerror(-err));
		goto cleanup;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.floor_events), discard, NULL, NULL);
	if (!rb) {
		fprintf(stderr, "floor: ring buffer: %s\n", strerror(errno));
		goto cleanup;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct signalfd_siginfo si;

		if (read(sfd, &si, sizeof(si)) == sizeof(si))
			break;
		err = ring_buffer__poll(rb, 50);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "floor: ring buffer: %s\n", strerror(-err));
			goto cleanup;
		}
	}
	ring_buffer__consume(rb);
	printf("lost=%llu\n", (unsigned long long)skel->bss->floor_lost);
	ret = 0;
cleanup:
	ring_buffer__free(rb);
	floor_bpf__destroy(skel);
	if (sfd >= 0)
		close(sfd);
	return ret;
}
