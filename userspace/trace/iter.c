// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "trace/iter.h"

int iter_run_once(struct bpf_program *prog, union bpf_iter_link_info *li)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = li, .link_info_len = li ? sizeof(*li) : 0);
	struct bpf_link *link;
	char buf[256];
	int err = 0, it;
	ssize_t n;

	link = bpf_program__attach_iter(prog, &opts);
	if (!link)
		return -errno;
	it = bpf_iter_create(bpf_link__fd(link));
	if (it < 0) {
		err = -errno;
		goto out;
	}
	while ((n = read(it, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		err = -errno;
	close(it);
out:
	bpf_link__destroy(link);
	return err;
}
