// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Records beyond --output: the syslog and journal sinks (events/sinks.h)
 * and live followers (the control socket's "follow" op, `execgate query
 * --follow`). Each is an output tap: it gets the records of each flush
 * before the file does. A follower is sent one chunk a flush; one whose
 * backlog passes FOLLOW_MAX_BEHIND is dropped with a last line saying so,
 * so no follower holds the daemon or its memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/server.h"
#include "daemon/daemon_int.h"
#include "daemon/metrics.h"
#include "events/sinks.h"
#include "util/jsonw.h"
#include "util/log.h"
#include "util/severity.h"

#define FOLLOW_MAX		64		/* followers at once */
#define FOLLOW_MAX_BEHIND	(4u << 20)	/* unsent bytes before a follower is dropped */

struct follower {
	struct eg_tap tap;
	struct eg_follow *f;
	struct ctl_conn *c;
	struct sbuf chunk;
	uint64_t sent;
};

struct eg_follow {
	struct daemon *d;
	struct follower *v[FOLLOW_MAX];
	size_t n;
	uint64_t dropped;		/* followers dropped for being too slow */
	uint64_t served;
};

static void follower_free(struct follower *fl)
{
	struct eg_follow *f = fl->f;
	size_t i;

	output_del_tap(f->d->out, &fl->tap);
	for (i = 0; i < f->n; i++)
		if (f->v[i] == fl) {
			f->v[i] = f->v[--f->n];
			break;
		}
	sbuf_free(&fl->chunk);
	free(fl);
}

static void on_close(struct ctl_conn *c, void *arg)
{
	(void)c;
	follower_free(arg);
}

static void follow_record(struct eg_tap *t, const char *line, size_t len, enum eg_rec_kind kind, int sev)
{
	struct follower *fl = (struct follower *)t;

	(void)kind;
	(void)sev;
	sbuf_put(&fl->chunk, line, len);
}

static void follow_flushed(struct eg_tap *t)
{
	struct follower *fl = (struct follower *)t;
	char note[256];
	int n;

	if (!fl->chunk.len)
		return;
	if (fl->chunk.oom || ctl_conn_unsent(fl->c) + fl->chunk.len > FOLLOW_MAX_BEHIND) {
		fl->f->dropped++;
		n = snprintf(note, sizeof(note),
			     "{\"event\":\"dropped\",\"reason\":\"too slow: more than %u bytes of records "
			     "waited to be read\",\"sent\":%" PRIu64 "}", FOLLOW_MAX_BEHIND, fl->sent);
		output_del_tap(fl->f->d->out, &fl->tap);
		sbuf_reset(&fl->chunk);
		/* on_close frees fl once the note is out */
		ctl_send_last(fl->c, note, n);
		return;
	}
	/*
	 * The chunk's last '\n' is the one ctl_send adds. A send that finds
	 * the peer gone frees fl (on_close): nothing of fl after a false.
	 */
	fl->sent += fl->chunk.len;
	if (ctl_send(fl->c, fl->chunk.data, fl->chunk.len - 1))
		sbuf_reset(&fl->chunk);
}

/* {"op":"follow","min_severity":"high"}: every record from now on, one a line */
static int op_follow(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_follow *f = arg;
	struct follower *fl;
	const char *sev = json_string_value(json_object_get(req, "min_severity"));
	char extra[512];

	/* every session's records, argv and all: not for a process inside one */
	if (daemon_peer_in_session(f->d, c)) {
		ctl_reply_err(c, "follow: a process inside a supervised session cannot read the daemon's records");
		return 0;
	}
	if (f->d->text) {
		ctl_reply_err(c, "follow: the daemon writes a text table (its output is a terminal); "
				 "follow needs JSON records (--format json)");
		return 0;
	}
	if (sev && !eg_severity_parse(sev)) {
		ctl_reply_err(c, "follow: \"min_severity\" is info, low, medium, high or critical");
		return 0;
	}
	if (f->n == FOLLOW_MAX) {
		ctl_reply_err(c, "follow: %d followers already; try again later", FOLLOW_MAX);
		return 0;
	}
	fl = calloc(1, sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	fl->f = f;
	fl->c = c;
	fl->tap.fn = follow_record;
	fl->tap.flushed = follow_flushed;
	/* what the file gets, at least: a follower reads the file's history beside it (query --since) */
	fl->tap.min_severity = f->d->o.min_severity_output;
	if (sev && eg_severity_parse(sev) > fl->tap.min_severity)
		fl->tap.min_severity = eg_severity_parse(sev);
	f->v[f->n++] = fl;
	f->served++;
	ctl_hold(c, on_close, fl);
	snprintf(extra, sizeof(extra), ",\"output\":\"%s\",\"format\":\"json\"", output_path(f->d->out));
	ctl_reply_ok(c, extra);
	output_add_tap(f->d->out, &fl->tap);
	return 0;
}

int daemon_shipping_start(struct daemon *d)
{
	int err;

	if (d->o.syslog) {
		err = sink_new("syslog", d->o.syslog, d->o.min_severity_syslog, d->loop, &d->syslog);
		if (err) {
			p_err("--syslog %s: %s", d->o.syslog, strerror(-err));
			return err;
		}
		sink_set_max_bytes(d->syslog, d->o.syslog_max_set ? d->o.syslog_max_bytes : SYSLOG_MAX_DEFAULT);
		if (d->o.hostname)
			sink_set_host(d->syslog, d->o.hostname);
		output_add_tap(d->out, sink_tap(d->syslog));
	}
	if (d->o.journal) {
		err = sink_new("journal", d->o.journal, d->o.min_severity_journal, d->loop, &d->journal);
		if (err) {
			p_err("--journal %s: %s", d->o.journal, strerror(-err));
			return err;
		}
		output_add_tap(d->out, sink_tap(d->journal));
	}
	d->follow = calloc(1, sizeof(*d->follow));
	if (!d->follow)
		return -ENOMEM;
	d->follow->d = d;
	return 0;
}

/* The follow op, once the control socket exists (ctl_ops.c) */
int daemon_follow_register(struct daemon *d)
{
	return ctl_register(d->ctl, "follow", CTL_ADMIN, op_follow, d->follow);
}

void daemon_shipping_free(struct daemon *d)
{
	while (d->follow && d->follow->n)
		follower_free(d->follow->v[0]);
	free(d->follow);
	d->follow = NULL;
	sink_free(d->syslog);
	sink_free(d->journal);
	d->syslog = d->journal = NULL;
}

void daemon_shipping_counters(struct daemon *d, struct jsonw *w)
{
	const struct eg_output_stats *os = output_stats(d->out);

	jsonw_uint_field(w, "written_exit", os->written[EG_REC_EXIT]);
	jsonw_uint_field(w, "filtered_severity", os->filtered_severity);
	if (d->syslog) {
		jsonw_uint_field(w, "syslog_sent", sink_stats(d->syslog)->sent);
		jsonw_uint_field(w, "syslog_dropped", sink_stats(d->syslog)->dropped);
		jsonw_uint_field(w, "syslog_cut", sink_stats(d->syslog)->cut);
		jsonw_uint_field(w, "syslog_filtered", sink_tap(d->syslog)->filtered);
	}
	if (d->journal) {
		jsonw_uint_field(w, "journal_sent", sink_stats(d->journal)->sent);
		jsonw_uint_field(w, "journal_dropped", sink_stats(d->journal)->dropped);
		jsonw_uint_field(w, "journal_filtered", sink_tap(d->journal)->filtered);
	}
	jsonw_uint_field(w, "followers", d->follow ? d->follow->n : 0);
	jsonw_uint_field(w, "followers_dropped", d->follow ? d->follow->dropped : 0);
}

uint64_t daemon_sinks_dropped(struct daemon *d)
{
	return (d->syslog ? sink_stats(d->syslog)->dropped : 0) + (d->journal ? sink_stats(d->journal)->dropped : 0);
}

/*
 * /run/execgate/NAME.output: the output's path, for `execgate query` when
 * no daemon answers (kept after the stop, replaced by the next start).
 */
void daemon_record_output(struct daemon *d)
{
	char rec[PATH_MAX + 16], tmp[PATH_MAX + 24], abs[PATH_MAX];
	size_t n = strlen(d->paths.pidfile);
	FILE *f;

	if (!d->o.output || !strcmp(d->o.output, "-"))
		return;
	if (!realpath(d->o.output, abs))
		return;
	if (n > 4 && !strcmp(d->paths.pidfile + n - 4, ".pid"))
		n -= 4;
	snprintf(rec, sizeof(rec), "%.*s.output", (int)n, d->paths.pidfile);
	snprintf(tmp, sizeof(tmp), "%s.tmp", rec);
	f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "%s\n", abs);
	if (fclose(f) || rename(tmp, rec))
		unlink(tmp);
}

void daemon_shipping_metrics(struct daemon *d, struct eg_metrics *m)
{
	struct eg_sink *v[2] = { d->syslog, d->journal };
	int i;

	for (i = 0; i < 2; i++) {
		if (!v[i])
			continue;
		m->sinks[i].on = true;
		m->sinks[i].sent = sink_stats(v[i])->sent;
		m->sinks[i].dropped = sink_stats(v[i])->dropped;
		m->sinks[i].filtered = sink_tap(v[i])->filtered;
	}
	m->followers = d->follow ? d->follow->n : 0;
	m->followers_dropped = d->follow ? d->follow->dropped : 0;
}
