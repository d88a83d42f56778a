// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the kernel enforces, read from the pins alone: the rule set in force
 * (kstate, kconf) and the pinned links with their programs. The daemon's
 * status and `execgate status` without a daemon print the same object.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "enforce/inforce.h"
#include "enforce/kmaps.h"
#include "util/paths.h"

static const char *link_type_name(__u32 t)
{
	switch (t) {
	case BPF_LINK_TYPE_RAW_TRACEPOINT: return "raw_tracepoint";
	case BPF_LINK_TYPE_TRACING: return "tracing";
	case BPF_LINK_TYPE_CGROUP: return "cgroup";
	case BPF_LINK_TYPE_PERF_EVENT: return "perf_event";
	default: return "other";
	}
}

static void put_links(const char *pin_dir, struct jsonw *w, size_t *ret_n)
{
	char dir[4096 + 16], path[4096 + 300];
	struct dirent *de;
	DIR *dp;

	*ret_n = 0;
	jsonw_key(w, "links");
	jsonw_start_array(w);
	snprintf(dir, sizeof(dir), "%s/links", pin_dir);
	dp = opendir(dir);
	while (dp && (de = readdir(dp))) {
		struct bpf_link_info li = {};
		struct bpf_prog_info pi = {};
		__u32 len;
		int fd, pfd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		len = sizeof(li);
		if (bpf_obj_get_info_by_fd(fd, &li, &len)) {
			close(fd);
			continue;
		}
		close(fd);
		jsonw_start_object(w);
		jsonw_string_field(w, "pin", de->d_name);
		/* a start between its two pin steps, or one whose renames stopped: the next takes it over */
		jsonw_bool_field(w, "pending", !strncmp(de->d_name, EG_PIN_NEW_PREFIX, strlen(EG_PIN_NEW_PREFIX)));
		jsonw_uint_field(w, "link_id", li.id);
		jsonw_string_field(w, "type", link_type_name(li.type));
		jsonw_uint_field(w, "prog_id", li.prog_id);
		pfd = bpf_prog_get_fd_by_id(li.prog_id);
		if (pfd >= 0) {
			len = sizeof(pi);
			if (!bpf_obj_get_info_by_fd(pfd, &pi, &len))
				jsonw_string_field(w, "program", pi.name);
			close(pfd);
		}
		jsonw_end_object(w);
		(*ret_n)++;
	}
	if (dp)
		closedir(dp);
	jsonw_end_array(w);
}

int inforce_json(const char *pin_dir, struct jsonw *w)
{
	struct kmaps_status st;
	struct kmaps km;
	size_t nlinks;
	int err;

	jsonw_start_object(w);
	err = kmaps_open_pinned(pin_dir, &km);
	if (!err) {
		err = kmaps_status(&km, &st);
		kmaps_close(&km);
	}
	if (err) {
		jsonw_bool_field(w, "rules_loaded", false);
	} else {
		jsonw_bool_field(w, "rules_loaded", st.loaded);
		if (st.loaded) {
			jsonw_bool_field(w, "enforcing", st.conf.flags & EG_KC_ENFORCE);
			jsonw_uint_field(w, "rules", st.conf.nrules - st.conf.n_ident);
			jsonw_string_field(w, "sha256", st.conf.sha256);
			jsonw_uint_field(w, "seq", st.seq);
		}
	}
	put_links(pin_dir, w, &nlinks);
	jsonw_end_object(w);
	return 0;
}
