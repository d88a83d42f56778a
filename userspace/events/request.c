// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdio.h>
#include "events/meta.h"
#include "events/request.h"
#include "util/errnos.h"

void format_request_fields(struct jsonw *w, const struct eg_request_view *v)
{
	char sid[16];
	unsigned int i, n = v->argv_listed_set ? v->argv_listed : v->argc;

	jsonw_int_field(w, "pid", v->pid);
	jsonw_int_field(w, "tid", v->tid);
	jsonw_uint_field(w, "euid", v->euid);
	jsonw_string_field(w, "syscall", v->execveat ? "execveat" : "execve");
	jsonw_string_field(w, "filename", v->filename);
	jsonw_string_field(w, "path_requested", v->path_requested);
	if (v->interpreter) {
		jsonw_string_field(w, "interpreter", v->interpreter);
		jsonw_string_field(w, "interpreter_requested", v->interpreter_requested);
	}
	jsonw_key(w, "argv");
	jsonw_start_array(w);
	for (i = 0; i < n; i++)
		jsonw_string(w, v->argv[i]);
	jsonw_end_array(w);
	jsonw_uint_field(w, "argc", v->argc);
	jsonw_bool_field(w, "truncated", v->truncated);
	jsonw_int_field(w, "depth", v->depth);
	jsonw_bool_field(w, "depth_known", v->depth_known);
	jsonw_int_field(w, "session_depth", v->session_depth);
	snprintf(sid, sizeof(sid), "s-%x", v->session);
	jsonw_string_field(w, "session", sid);
	jsonw_string_field(w, "cgroup", v->cgroup);
}

void format_refused_json(struct sbuf *b, const struct eg_request_view *v, int err,
			 const struct eg_annotation *a, const char *approval_id)
{
	struct jsonw w;

	meta_open(&w, b, "exec_failed");
	jsonw_key(&w, "exec_id");
	jsonw_null(&w);
	format_request_fields(&w, v);
	jsonw_uint_field(&w, "errno", err);
	jsonw_string_field(&w, "error", errno_name(err));
	/* after jsonw's last field: the annotation's each start with a comma */
	format_annotation_json(b, a, NULL);
	if (approval_id)
		jsonw_string_field(&w, "approval_id", approval_id);
	jsonw_end_object(&w);
	sbuf_putc(b, '\n');
}
