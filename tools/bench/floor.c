// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * floor: loads the floor programs (floor.bpf.c), prints "ready" once they
 * are attached, and reads their ring buffer every 50 ms, throwing the
 * records away, until SIGTERM or SIGINT; then prints "lost=N" (records the
 * ring buffer had no room for) and "records=N". tools/bench/stages.py runs
 * it between the daemon's runs: what the programs cost comes from the
 * kernel's run-time statistics, not from here.
 *
 * floor -o FILE -t MS: the floor under the daemon at a low exec rate
 * (target 2c): it wakes every MS ms (50 by default) and writes what it
 * read to FILE, the records' own bytes, with one write(2). The least that
 * carries a record's facts to a file within the same bounded delay as the
 * daemon's drains: one wakeup and one write per batch, no formatting.
 *
 * floor -n: instead of the floor programs, one that does nothing at each
 * of execgate's hooks (the nop_ programs): what running a program there
 * costs the kernel at all, whatever it does.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

static unsigned long long records;
static char out_buf[1 << 20];
static size_t out_len;
static int out_fd = -1;
static int period_ms = 50;

/* sched_prepare_exec is 6.10+: a type the kernel's BTF has for each tp_btf tracepoint */
static bool has_prepare_exec(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found = btf && btf__find_by_name(btf, "btf_trace_sched_prepare_exec") >= 0;

	btf__free(btf);
	return found;
}

/* -n: the nop_ programs alone; otherwise the floor's alone */
static void choose_programs(struct floor_bpf *skel, bool nop)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, !strncmp(bpf_program__name(p), "nop_", 4) == nop);
	if (nop && !has_prepare_exec())
		bpf_program__set_autoload(skel->progs.nop_prepare_exec, false);
}

static int write_out(void)
{
	size_t off = 0;

	while (off < out_len) {
		ssize_t n = write(out_fd, out_buf + off, out_len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "floor: writing: %s\n", n < 0 ? strerror(errno) : "short write");
			return -1;
		}
		off += (size_t)n;
	}
	out_len = 0;
	return 0;
}

static int take(void *ctx, void *data, size_t size)
{
	(void)ctx;
	records++;
	if (out_fd < 0)
		return 0;		/* thrown away */
	if (out_len + size > sizeof(out_buf) && write_out())
		return -EIO;
	if (size > sizeof(out_buf))
		size = sizeof(out_buf);	/* larger than any floor record */
	memcpy(out_buf + out_len, data, size);
	out_len += size;
	return 0;
}

int main(int argc, char **argv)
{
	struct ring_buffer *rb = NULL;
	struct floor_bpf *skel;
	sigset_t mask;
	int err, sfd = -1, ret = 1;
	bool nop = false;

	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "-n")) {
			nop = true;
			i--;
		} else if (i + 1 < argc && !strcmp(argv[i], "-o")) {
			out_fd = open(argv[i + 1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
			if (out_fd < 0) {
				fprintf(stderr, "floor: %s: %s\n", argv[i + 1], strerror(errno));
				return 1;
			}
		} else if (i + 1 < argc && !strcmp(argv[i], "-t") && atoi(argv[i + 1]) > 0) {
			period_ms = atoi(argv[i + 1]);
		} else {
			fprintf(stderr, "usage: floor [-n] [-o FILE] [-t MS]\n");
			return 2;
		}
	}
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
	choose_programs(skel, nop);
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
	rb = ring_buffer__new(bpf_map__fd(skel->maps.floor_events), take, NULL, NULL);
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
		err = ring_buffer__poll(rb, period_ms);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "floor: ring buffer: %s\n", strerror(-err));
			goto cleanup;
		}
		if (out_len && write_out())
			goto cleanup;
	}
	ring_buffer__consume(rb);
	if (out_len && write_out())
		goto cleanup;
	printf("lost=%llu\nrecords=%llu\n", (unsigned long long)skel->bss->floor_lost, records);
	ret = 0;
cleanup:
	ring_buffer__free(rb);
	floor_bpf__destroy(skel);
	if (sfd >= 0)
		close(sfd);
	if (out_fd >= 0)
		close(out_fd);
	return ret;
}
