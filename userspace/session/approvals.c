// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Approvals: an exec whose verdict is `approval` is parked, its thread
 * waiting in the kernel, until a person answers (`execgate approve|deny
 * ID`), the policies' approval_timeout passes (approval_timeout(): deny
 * unless every policy says allow), or the process dies. Parking costs no
 * other exec anything: the event loop goes on. Only root or --ctl-group
 * members may answer, and never a process the kernel counts as inside a
 * session: an agent cannot approve its own request, whatever its uid.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include "ctl/proto.h"
#include "ctl/server.h"
#include "events/format.h"
#include "events/meta.h"
#include "session/internal.h"
#include "util/digest.h"

struct approval {
	char id[24];
	struct eg_sessions *s;
	struct exec_request *r;
	enum eg_decision decision;	/* what the policy said: approval */
	char *rule, *message;		/* copies: the policy may be reloaded meanwhile */
	uint64_t requested_real_ns;
	uint64_t deadline_real_ns;
	uint64_t timeout_ms;
	bool allow_on_timeout;
	struct eg_watch *timer;
	struct eg_watch *gone;		/* the process's pidfd: readable when it exits */
	char *brief;			/* its entry in a listing, argv shortened, no closing brace (make_brief) */
	uid_t uid;			/* the session's user: whose share it takes */
	struct approval *next;
};

/*
 * A listing or a watcher gets each argument cut at BRIEF_ARG bytes and at
 * most BRIEF_ARGS of them, BRIEF_BYTES in all, with "argv_bytes" (the size
 * of the whole) and "argv_shortened": 1024 requests of 64 KiB each would
 * be a reply of 64 MiB. `approvals --json ID` shows one whole.
 */
#define BRIEF_ARG	256
#define BRIEF_ARGS	32
#define BRIEF_BYTES	2048

/*
 * What a brief keeps of argument i (len bytes of str), kept bytes before
 * it: len (whole), fewer ("..." follows; whole UTF-8 characters where they
 * are, a byte that is not UTF-8 being one of its own), or -1 (left out).
 * *cut is set when it is not whole.
 */
static ssize_t brief_keep(const char *str, size_t len, size_t i, size_t kept, bool *cut)
{
	size_t k, back = 0;

	if (i >= BRIEF_ARGS || kept >= BRIEF_BYTES) {
		*cut = true;
		return -1;
	}
	if (len <= BRIEF_ARG && kept + len <= BRIEF_BYTES)
		return (ssize_t)len;
	k = len > BRIEF_ARG ? BRIEF_ARG : BRIEF_BYTES - kept;
	while (k && back < 3 && ((unsigned char)str[k] & 0xc0) == 0x80) {
		k--;
		back++;
	}
	if (back == 3 && ((unsigned char)str[k] & 0xc0) == 0x80)
		k += back;
	*cut = true;
	return (ssize_t)k;
}

/* Cuts the "argv" of o in place; true if anything was cut. */
static bool brief_argv(json_t *o)
{
	json_t *argv = json_object_get(o, "argv"), *out, *v;
	size_t i, bytes = 0, kept = 0;
	bool cut = false;

	if (!json_is_array(argv))
		return false;
	out = json_array();
	if (!out)
		return false;
	json_array_foreach(argv, i, v) {
		const char *str = json_string_value(v);
		size_t n = json_string_length(v);

		ssize_t k;

		bytes += n + 1;
		if (!str) {
			cut = true;
			continue;
		}
		k = brief_keep(str, n, i, kept, &cut);
		if (k < 0)
			continue;
		if ((size_t)k < n) {
			char buf[BRIEF_ARG + 4];

			memcpy(buf, str, k);
			memcpy(buf + k, "...", 4);
			json_array_append_new(out, json_stringn(buf, k + 3));
			kept += k + 3;
			continue;
		}
		json_array_append(out, v);
		kept += n;
	}
	if (!cut) {
		json_decref(out);
		return false;
	}
	json_object_set_new(o, "argv", out);
	json_object_set_new(o, "argv_bytes", json_integer(bytes));
	json_object_set_new(o, "argv_shortened", json_true());
	return true;
}

/* A record for watchers, argv shortened where it is long; out gets the line without its '\n'. */
static void brief_record(const char *json, size_t len, struct sbuf *out)
{
	json_t *o;
	char *d;

	if (len <= BRIEF_BYTES * 2 || !(o = json_loadb(json, len, 0, NULL))) {
		sbuf_put(out, json, len);
		return;
	}
	brief_argv(o);
	d = json_dumps(o, JSON_COMPACT);
	if (d)
		sbuf_puts(out, d);
	else
		sbuf_put(out, json, len);
	free(d);
	json_decref(o);
}

static void watchers_send(struct eg_sessions *s, const char *json, size_t len)
{
	unsigned int i = 0;

	/* a watcher gone while sending leaves its slot to the last one (watcher_gone): send there too */
	while (i < s->nwatchers) {
		struct ctl_conn *c = s->watchers[i];

		if (ctl_send(c, json, len) || (i < s->nwatchers && s->watchers[i] == c))
			i++;
	}
}

/* The approval record: requested, then approved, denied, timeout or cancelled. */
static void emit(struct eg_sessions *s, struct approval *a, const char *event, uid_t by_uid,
		 pid_t by_pid, const char *reason)
{
	struct sbuf b = {};
	struct jsonw w;
	struct sbuf t = {};
	char text[512];

	meta_open(&w, &b, "approval");
	jsonw_string_field(&w, "event", event);
	jsonw_string_field(&w, "approval_id", a->id);
	request_json(&w, a->r);
	jsonw_string_field(&w, "rule", a->rule);
	jsonw_string_field(&w, "message", a->message);
	format_time(&t, a->deadline_real_ns);
	jsonw_key(&w, "deadline");
	jsonw_bytes(&w, t.data, t.len);
	jsonw_uint_field(&w, "timeout_ms", a->timeout_ms);
	jsonw_string_field(&w, "timeout_action", a->allow_on_timeout ? "allow" : "deny");
	if (by_pid) {
		jsonw_key(&w, "answered_by");
		jsonw_start_object(&w);
		jsonw_uint_field(&w, "uid", by_uid);
		jsonw_int_field(&w, "pid", by_pid);
		if (s->answer_token[0]) {
			/* through the HTTP API: the token's name is who answered */
			jsonw_string_field(&w, "via", "api");
			jsonw_string_field(&w, "token", s->answer_token);
		}
		jsonw_end_object(&w);
	}
	if (reason)
		jsonw_string_field(&w, "reason", reason);
	jsonw_end_object(&w);
	sbuf_putc(&b, '\n');
	snprintf(text, sizeof(text), "approval %s %s: s-%x pid %d %.200s (%.100s)", a->id, event, a->r->session->id,
		 (int)a->r->tgid, a->r->argc ? a->r->argv[0] : a->r->path, a->rule ? a->rule : "default");
	sessions_emit(s, &b, text);
	if (!b.oom && s->nwatchers) {
		struct sbuf brief = {};

		brief_record(b.data, b.len - 1, &brief);
		if (!brief.oom)
			watchers_send(s, brief.data, brief.len);
		sbuf_free(&brief);
	}
	sbuf_free(&b);
	sbuf_free(&t);
}

/* The entry of a in a listing: whole (approvals --json ID), or with argv shortened. */
static void entry_json(struct jsonw *w, const struct approval *a)
{
	jsonw_start_object(w);
	jsonw_string_field(w, "approval_id", a->id);
	request_json(w, a->r);
	jsonw_string_field(w, "rule", a->rule);
	jsonw_string_field(w, "message", a->message);
	jsonw_end_object(w);
}

/*
 * a's entry in a listing, argv shortened as brief_argv() shortens a
 * watcher's record, written from the request's own bytes: a round trip
 * through jansson would refuse an argument that is not UTF-8 (the request
 * was then denied at once, nobody asked). The object's text without its
 * closing brace (the listing adds seconds_left), or NULL (out of memory).
 */
static char *make_brief(const struct approval *a)
{
	const struct exec_request *r = a->r;
	char **argv = calloc(r->argc ? r->argc : 1, sizeof(*argv));
	size_t bytes = 0, kept = 0;
	unsigned int i, n = 0;
	struct sbuf b = {};
	struct jsonw w;
	char *ret = NULL;
	bool cut = false;

	if (!argv)
		return NULL;
	for (i = 0; i < r->argc; i++) {
		const char *str = r->argv[i];
		size_t len = strlen(str);
		ssize_t sk = brief_keep(str, len, i, kept, &cut);
		size_t k;

		bytes += len + 1;
		if (sk < 0)
			continue;
		k = (size_t)sk;
		argv[n] = malloc(k + 4);
		if (!argv[n])
			goto out;
		memcpy(argv[n], str, k);
		memcpy(argv[n] + k, "...", 4);
		argv[n][k < len ? k + 3 : k] = '\0';
		kept += k < len ? k + 3 : k;
		n++;
	}
	jsonw_init(&w, &b);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "approval_id", a->id);
	request_json_argv(&w, r, argv, n);
	jsonw_string_field(&w, "rule", a->rule);
	jsonw_string_field(&w, "message", a->message);
	if (cut) {
		jsonw_uint_field(&w, "argv_bytes", bytes);
		jsonw_bool_field(&w, "argv_shortened", true);
	}
	jsonw_end_object(&w);
	if (!b.oom && b.len > 1) {
		ret = malloc(b.len);
		if (ret) {
			memcpy(ret, b.data, b.len - 1);	/* all but the closing brace */
			ret[b.len - 1] = '\0';
		}
	}
	sbuf_free(&b);
out:
	while (n)
		free(argv[--n]);
	free(argv);
	return ret;
}

static void unlink_approval(struct eg_sessions *s, struct approval *a)
{
	struct approval **pp;

	for (pp = &s->approvals; *pp; pp = &(*pp)->next) {
		if (*pp == a) {
			*pp = a->next;
			s->napprovals--;
			break;
		}
	}
	loop_del(a->timer);
	loop_del(a->gone);
	if (a->r)
		session_put(s, a->r->session);
	request_free(a->r);
	free(a->brief);
	free(a->rule);
	free(a->message);
	free(a);
}

/*
 * OUT_FAILED: allowed, then refused all the same (no ticket could be
 * written); OUT_RESTART: refused because the daemon hands over, whatever
 * the timeout would have said (a restart never allows).
 */
enum outcome { OUT_APPROVED, OUT_DENIED, OUT_TIMEOUT, OUT_CANCELLED, OUT_FAILED, OUT_RESTART };

static void finish(struct eg_sessions *s, struct approval *a, enum outcome o, uid_t by_uid,
		   pid_t by_pid, const char *reason)
{
	struct eg_verdict v = { .decision = EG_DECISION_DENY, .rule = a->rule, .message = a->message };
	struct exec_request *r = a->r;
	char line[1024];
	bool allow = o == OUT_APPROVED || (o == OUT_TIMEOUT && a->allow_on_timeout);
	const char *event = o == OUT_APPROVED ? "approved" : o == OUT_DENIED || o == OUT_RESTART ? "denied" :
			    o == OUT_TIMEOUT ? "timeout" : "cancelled";
	const char *action = o == OUT_APPROVED ? "approved" : o == OUT_TIMEOUT ? "timed-out" : "blocked";

	if (o != OUT_CANCELLED && allow) {
		int rc = request_allow(s, r);

		if (rc == -ESRCH) {
			/* it died while we answered */
			o = OUT_CANCELLED;
			event = "cancelled";
		} else if (rc) {
			/* refused after all (request_allow said so on its stderr): no ticket */
			snprintf(line, sizeof(line), "%s%sno ticket for the exec (%s): refused",
				 reason ? reason : "", reason ? "; " : "", strerror(-rc));
			reason = line;
			o = OUT_FAILED;
			event = "denied";
			v.decision = EG_DECISION_ERROR;
			v.message = "no ticket for the exec";
			refusal_note(s, r, a->rule, v.message, "blocked");
			emit_blocked(s, r, &v, "blocked", a->id);
			s->st.denied++;
			r->session->denied++;
		} else {
			verdict_put(s, r->tid, r->session->id, "approval", action, a->rule, a->message, a->id,
				    s->ticket->dev, s->ticket->ino, s->ticket->issued_ns);
			s->st.allowed++;
		}
	} else if (o != OUT_CANCELLED) {
		snprintf(line, sizeof(line), "execgate: denied: %s (rule %s)\n",
			 o == OUT_DENIED ? "the approval was refused" :
			 o == OUT_RESTART ? "the daemon restarted while the approval waited; ask again" :
			 "no answer to the approval request in time",
			 a->rule ? a->rule : "default");
		request_deny(s, r, line);
		v.message = o == OUT_DENIED ? "approval refused" : o == OUT_RESTART ? "the daemon restarted" :
			    "approval timed out";
		refusal_note(s, r, a->rule, v.message, action);
		emit_blocked(s, r, &v, action, a->id);
		s->st.denied++;
		r->session->denied++;
	}
	switch (o) {
	case OUT_APPROVED: s->st.approved++; break;
	case OUT_DENIED: s->st.approval_denied++; break;
	case OUT_TIMEOUT: s->st.timed_out++; break;
	case OUT_CANCELLED: s->st.cancelled++; break;
	case OUT_FAILED: s->st.approval_denied++; break;
	case OUT_RESTART: s->st.approval_denied++; break;
	}
	emit(s, a, event, by_uid, by_pid, reason);
	unlink_approval(s, a);
}

static void on_timeout(struct eg_watch *w, uint64_t n, void *arg)
{
	struct approval *a = arg;

	(void)w;
	(void)n;
	finish(a->s, a, OUT_TIMEOUT, 0, 0, NULL);
}

static void on_gone(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct approval *a = arg;

	(void)w;
	(void)fd;
	(void)events;
	finish(a->s, a, OUT_CANCELLED, 0, 0, "the waiting process exited");
}

struct timeout {
	uint64_t shortest;		/* of the approval_timeouts set; 0: none is */
	uint64_t longest;		/* of every policy's, set or default */
	bool allow;			/* every policy allows on timeout */
};

static void timeout_add(struct timeout *t, const struct eg_policy *p)
{
	const struct eg_policy_settings *st = policy_settings(p);
	uint64_t ms = st->approval_timeout_ms ? st->approval_timeout_ms : APPROVAL_TIMEOUT_MS;

	t->allow &= st->approval_timeout_action == EG_TIMEOUT_ALLOW;
	if (ms > t->longest)
		t->longest = ms;
	if (st->approval_timeout_set && (!t->shortest || ms < t->shortest))
		t->shortest = ms;
}

/*
 * What nobody's answer comes to, by every policy the judge chains for the
 * session (the daemon's, and each session's from the innermost out), not
 * by the innermost alone: a session policy must not loosen the timeout of
 * an approval its outer policies asked for. Allowed only if each of them
 * allows on timeout, and then once the longest of their timeouts has
 * passed; else refused after the shortest approval_timeout any of them
 * sets (APPROVAL_TIMEOUT_MS if none does).
 */
static void approval_timeout(struct eg_sessions *s, struct eg_session *se, uint64_t *ret_ms,
			     bool *ret_allow)
{
	struct timeout t = { .allow = true };
	struct eg_session *x;
	bool any = false;

	if (*s->o.global) {
		timeout_add(&t, *s->o.global);
		any = true;
	}
	for (x = se; x; x = x->parent) {
		if (x->policy) {
			timeout_add(&t, x->policy);
			any = true;
		}
	}
	*ret_allow = any && t.allow;
	if (*ret_allow)
		*ret_ms = t.longest;
	else
		*ret_ms = t.shortest ? t.shortest : APPROVAL_TIMEOUT_MS;
}

static struct eg_session *tree_of(struct eg_session *se)
{
	while (se->parent)
		se = se->parent;
	return se;
}

/* Approvals pending for a session tree (a session and every one started inside it). */
static unsigned int tree_pending(struct eg_sessions *s, struct eg_session *se)
{
	struct eg_session *top = tree_of(se);
	struct approval *a;
	unsigned int n = 0;

	for (a = s->approvals; a; a = a->next)
		if (tree_of(a->r->session) == top)
			n++;
	return n;
}

static unsigned int uid_pending(struct eg_sessions *s, uid_t uid)
{
	struct approval *a;
	unsigned int n = 0;

	for (a = s->approvals; a; a = a->next)
		n += a->uid == uid;
	return n;
}

/*
 * Why r cannot wait for an answer now, or NULL. A user's share: the first
 * APPROVALS_UID_FLOOR of theirs wait whenever there is room at all; past
 * that, only while more than APPROVALS_UID_SLACK places stay free for
 * others, and never more than APPROVALS_PER_UID. So one user (or three)
 * flooding the pool leave every other user, root too, their floor.
 */
static const char *no_room(struct eg_sessions *s, struct exec_request *r, unsigned int *ret_limit)
{
	unsigned int mine;

	if (s->napprovals >= APPROVALS_MAX) {
		*ret_limit = APPROVALS_MAX;
		return "too many approvals pending";
	}
	if (tree_pending(s, r->session) >= APPROVALS_PER_TREE) {
		*ret_limit = APPROVALS_PER_TREE;
		return "too many approvals pending in this session tree";
	}
	mine = uid_pending(s, r->session->uid);
	if (mine >= APPROVALS_PER_UID ||
	    (mine >= APPROVALS_UID_FLOOR && APPROVALS_MAX - s->napprovals <= APPROVALS_UID_SLACK)) {
		*ret_limit = mine;
		return "too many approvals pending for this user";
	}
	return NULL;
}

void approval_park(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v)
{
	r->parked = true;
	/* the records of the approval name it, read while the task surely waits */
	request_cgroup(s, r);
	struct approval *a = NULL;
	unsigned int limit = 0;
	const char *full = no_room(s, r, &limit);
	char line[256];
	uint8_t rnd[8];

	if (full || !(a = calloc(1, sizeof(*a)))) {
		struct eg_verdict d = *v;

		d.decision = EG_DECISION_DENY;
		d.message = full ? full : "out of memory";
		snprintf(line, sizeof(line), "execgate: denied: %s (%u at once%s)\n", d.message, limit,
			 full && strcmp(full, "too many approvals pending") ? ": answer or wait for those first" : "");
		request_deny(s, r, line);
		refusal_note(s, r, d.rule, d.message, "blocked");
		emit_blocked(s, r, &d, "blocked", NULL);
		s->st.denied++;
		r->session->denied++;
		request_free(r);
		return;
	}
	eg_random(rnd, sizeof(rnd));
	memcpy(a->id, "a-", 2);
	eg_hex(rnd, sizeof(rnd), a->id + 2);
	a->s = s;
	a->r = r;
	a->uid = r->session->uid;
	r->session->refs++;
	a->decision = v->decision;
	a->rule = v->rule ? strdup(v->rule) : NULL;
	a->message = v->message ? strdup(v->message) : NULL;
	approval_timeout(s, r->session, &a->timeout_ms, &a->allow_on_timeout);
	a->requested_real_ns = clock_real_ns();
	a->deadline_real_ns = a->requested_real_ns + a->timeout_ms * 1000000ull;
	a->next = s->approvals;
	s->approvals = a;
	s->napprovals++;
	s->st.approvals++;
	if (loop_add_timer(s->o.loop, a->timeout_ms, 0, on_timeout, a, &a->timer) ||
	    (request_pidfd(r) >= 0 && loop_add_fd(s->o.loop, r->pidfd, EPOLLIN, on_gone, a, &a->gone)) ||
	    !(a->brief = make_brief(a))) {
		finish(s, a, OUT_DENIED, 0, 0, "cannot wait for an answer");
		return;
	}
	emit(s, a, "requested", 0, 0, NULL);
	/* once, where the process says things: it is waiting, not hung, and for whom */
	snprintf(line, sizeof(line), "execgate: waiting for approval %s (execgate approve %s)\n", a->id, a->id);
	tell_target(s, r, line);
}

static bool same_exec(const struct exec_request *a, const struct exec_request *b)
{
	unsigned int i;

	/* b's argv unread: its lookup failed, so it is no exec a person was asked about */
	if (!b->argv_read || a->tid != b->tid || a->session != b->session || strcmp(a->path, b->path) ||
	    a->argc != b->argc)
		return false;
	for (i = 0; i < a->argc; i++)
		if (strcmp(a->argv[i], b->argv[i]))
			return false;
	return true;
}

bool approval_waits_for(const struct eg_sessions *s, pid_t tid)
{
	const struct approval *a;

	for (a = s->approvals; a; a = a->next)
		if (a->r->tid == tid)
			return true;
	return false;
}

int approval_rejoin(struct eg_sessions *s, struct exec_request *r)
{
	struct approval *a;

	for (a = s->approvals; a; a = a->next) {
		if (!same_exec(a->r, r))
			continue;
		/*
		 * A signal interrupted the wait (kernels without
		 * WAIT_KILLABLE_RECV) and the exec asked again: it is the same
		 * request, not a second one. The new notification replaces the
		 * old one, whose id is gone.
		 */
		free(a->r->req);
		a->r->req = r->req;
		a->r->id = r->id;
		a->r->listener = r->listener;
		r->req = NULL;
		request_free(r);
		return 1;
	}
	return 0;
}

void approvals_session_ended(struct eg_sessions *s, struct eg_session *se)
{
	struct approval *a, *next;

	for (a = s->approvals; a; a = next) {
		next = a->next;
		if (a->r->session == se)
			finish(s, a, OUT_CANCELLED, 0, 0, "the session ended");
	}
}

/*
 * A handover refuses what waits: the next daemon cannot take over a
 * question half asked (the notification, the ticket's plan), and
 * answering it as its timeout would could allow an exec nobody answered
 * (approval_timeout_action: allow) long before its deadline.
 */
void approvals_resolve_all(struct eg_sessions *s, const char *why)
{
	while (s->approvals)
		finish(s, s->approvals, OUT_RESTART, 0, 0, why);
}

/* ---- control ops --------------------------------------------------------- */

static void watcher_gone(struct ctl_conn *c, void *arg)
{
	struct eg_sessions *s = arg;
	unsigned int i;

	for (i = 0; i < s->nwatchers; i++) {
		if (s->watchers[i] == c) {
			s->watchers[i] = s->watchers[--s->nwatchers];
			return;
		}
	}
}

static int op_approvals(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_sessions *s = arg;
	struct approval *a;
	struct sbuf b = {};
	struct jsonw w;
	bool watch = false;
	const char *id = NULL;
	uint64_t now = clock_real_ns();
	unsigned int i;
	char err[128];

	/* every session's pending command lines, streamed with --watch: not for a process inside one */
	if (sessions_peer_inside(s, c)) {
		ctl_reply_err(c, "approvals: a process inside a supervised session cannot list the approvals");
		return 0;
	}
	if (ctl_get_bool(req, "watch", &watch, err, sizeof(err)) == -EINVAL ||
	    ctl_get_str(req, "id", false, 23, &id, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "%s", err);
		return 0;
	}
	if (id) {
		for (a = s->approvals; a && strcmp(a->id, id); a = a->next)
			;
		if (!a) {
			ctl_reply_err(c, "no pending approval %s (answered, timed out, or never asked)", id);
			return 0;
		}
	}
	ctl_reply_open(&w, &b);
	jsonw_key(&w, "approvals");
	jsonw_start_array(&w);
	for (a = s->approvals; a; a = a->next) {
		uint64_t left = a->deadline_real_ns > now ?
				(a->deadline_real_ns - now + 999999999ull) / 1000000000ull : 0;
		char *d;

		if (id && strcmp(a->id, id))
			continue;
		if (id) {
			/* one, whole: its bytes as they are, as in brief */
			struct sbuf e = {};
			struct jsonw ew;

			jsonw_init(&ew, &e);
			entry_json(&ew, a);
			if (!e.oom && e.len > 1) {
				e.len--;	/* the closing brace */
				sbuf_printf(&e, ",\"argv_bytes\":%" PRIu64 ",\"seconds_left\":%" PRIu64 "}",
					    (uint64_t)a->r->argv_bytes, left);
			}
			d = e.oom ? NULL : strndup(e.data, e.len);
			sbuf_free(&e);
		} else {
			struct sbuf e = {};

			sbuf_printf(&e, "%s,\"seconds_left\":%" PRIu64 "}", a->brief, left);
			d = e.oom ? NULL : strndup(e.data, e.len);
			sbuf_free(&e);
		}
		if (d)
			jsonw_raw(&w, d, strlen(d));
		free(d);
	}
	jsonw_end_array(&w);
	ctl_reply_send(c, &w, &b);
	for (i = 0; watch && i < s->nwatchers; i++)
		if (s->watchers[i] == c)
			watch = false;	/* watching already: one entry, one on_close */
	if (watch) {
		struct ctl_conn **nw = realloc(s->watchers, (s->nwatchers + 1) * sizeof(*nw));

		if (nw && s->nwatchers < 256) {
			s->watchers = nw;
			s->watchers[s->nwatchers++] = c;
			ctl_hold(c, watcher_gone, s);
		} else if (nw) {
			s->watchers = nw;
		}
	}
	return 0;
}

static int answer(struct ctl_conn *c, const json_t *req, struct eg_sessions *s, bool approve)
{
	const struct ctl_peer *peer = ctl_peer(c);
	const char *id = NULL, *reason = NULL;
	struct approval *a;
	uint32_t in = 0;
	char err[128];
	int rc;

	if (ctl_get_str(req, "id", true, 23, &id, err, sizeof(err)) ||
	    ctl_get_str(req, "reason", false, 512, &reason, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "%s", err);
		return 0;
	}
	/* the kernel says whether the caller runs inside a session: no self-approval */
	rc = sessions_of_peer(s, c, &in);
	if (rc) {
		ctl_reply_err(c, "cannot tell whether pid %d, which connected, runs inside a session (%s): "
			      "refused as if it did", (int)peer->pid, strerror(-rc));
		return 0;
	}
	if (in) {
		ctl_reply_err(c, "pid %d runs inside session s-%x: a process in a session cannot answer approvals",
			      (int)peer->pid, in);
		return 0;
	}
	for (a = s->approvals; a && strcmp(a->id, id); a = a->next)
		;
	if (!a) {
		ctl_reply_err(c, "no pending approval %s (answered, timed out, or never asked)", id);
		return 0;
	}
	if (peer->api)
		snprintf(s->answer_token, sizeof(s->answer_token), "%s", peer->name);
	finish(s, a, approve ? OUT_APPROVED : OUT_DENIED, peer->uid, peer->pid, reason);
	s->answer_token[0] = '\0';
	ctl_reply_ok(c, NULL);
	return 0;
}

static int op_approve(struct ctl_conn *c, const json_t *req, void *arg)
{
	return answer(c, req, arg, true);
}

static int op_deny(struct ctl_conn *c, const json_t *req, void *arg)
{
	return answer(c, req, arg, false);
}

int approvals_init(struct eg_sessions *s)
{
	int err;

	err = ctl_register(s->o.ctl, "approvals", CTL_ADMIN, op_approvals, s);
	if (!err)
		err = ctl_register(s->o.ctl, "approve", CTL_ADMIN, op_approve, s);
	if (!err)
		err = ctl_register(s->o.ctl, "deny", CTL_ADMIN, op_deny, s);
	return err;
}

void approvals_free(struct eg_sessions *s)
{
	while (s->approvals)
		unlink_approval(s, s->approvals);
	free(s->watchers);
	s->watchers = NULL;
	s->nwatchers = 0;
}
