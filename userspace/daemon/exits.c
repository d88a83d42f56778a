// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Process lifetimes in the record path: an exit record (bpf handle_exit)
 * named after the exec it ends, from the recent execs (events/lineage.c),
 * and the labels (severity, tags) of the rule that judged an exec.
 */
#include <string.h>
#include "daemon/daemon_int.h"
#include "events/exit.h"
#include "events/lineage.h"

void daemon_label(struct daemon *d, int rule_index, struct eg_annotation *a)
{
	if (!d->policy || rule_index < 0 ||
	    policy_rule_labels(d->policy, rule_index, &a->severity, &a->tags, &a->ntags)) {
		a->severity = 0;
		a->tags = NULL;
		a->ntags = 0;
	}
}

void daemon_on_exit(struct daemon *d, const void *data, size_t size)
{
	const struct eg_lineage_entry *e;
	struct eg_exit_event x;
	enum eg_filter_cause cause;

	if (exit_decode(data, size, &x)) {
		d->st.malformed++;
		return;
	}
	/*
	 * One end per process. The kernel's program reports it from the
	 * thread that finds no thread left alive, and before Linux 6.16
	 * do_exit() counts a thread down well before that tracepoint: two
	 * threads leaving at once (exit_group of a busy process) can both find
	 * none left (3 in 400 runs of 8 spinning threads here). The second
	 * comes right after the first: a slot per exec id remembers it.
	 */
	{
		unsigned int slot = (unsigned int)((x.pid * 0x9e3779b1u) ^ (uint32_t)(x.exec_ktime_ns >> 7)) &
				    (sizeof(d->exits_seen) / sizeof(d->exits_seen[0]) - 1);

		if (d->exits_seen[slot].pid == x.pid && d->exits_seen[slot].exec_ktime_ns == x.exec_ktime_ns) {
			d->st.exits_repeated++;
			return;
		}
		d->exits_seen[slot].pid = x.pid;
		d->exits_seen[slot].exec_ktime_ns = x.exec_ktime_ns;
	}
	e = lineage_get(d->lineage, x.pid, x.exec_ktime_ns);
	/* the volume filters thin exits as they thin execs: by uid, comm and program */
	if (filter_active(&d->filter)) {
		struct eg_record r = {};

		r.h.type = EG_EVENT_EXIT;
		r.h.uid = x.uid;
		memcpy(r.h.comm, x.comm, sizeof(r.h.comm));
		r.filename = e ? (struct eg_str){ e->filename, e->filename_len }
			       : (struct eg_str){ x.comm, strnlen(x.comm, sizeof(x.comm)) };
		cause = filter_match(&d->filter, &r);
		if (cause != EG_FILTER_NONE) {
			d->filter.n[cause]++;
			return;
		}
	}
	if (d->text) {
		/* the table shows the ends that say something: a failure or a signal */
		if (!x.exit_code)
			return;
		format_exit_text(output_buf(d->out), &x, &d->fc, e);
	} else {
		format_exit_json(output_buf(d->out), &x, &d->fc, e);
	}
	output_end_sev(d->out, EG_REC_EXIT, e ? e->severity : 0);
}
