// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Handing sessions to the next daemon (execgate daemon on SIGUSR2): each
 * session's facts, its listener fd and its recent refusals go out
 * (sessions_export) and come back in the new daemon (sessions_import),
 * which serves the listeners from then on (sessions_resume).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <seccomp.h>
#include <linux/kcmp.h>
#include "ctl/proto.h"
#include "ctl/server.h"
#include "events/meta.h"
#include "session/boundary.h"
#include "session/denials.h"
#include "session/internal.h"
#include "util/clock.h"
#include "util/digest.h"
#include "util/hfields.h"
#include "util/landlock.h"
#include "util/log.h"


/* ---- handing sessions to the next daemon (execgate daemon on SIGUSR2) ---- */

/* A session's plain fields and a refusal's: one table each, both ways. */
static const struct eg_hfield session_fields[] = {
	EG_HF(struct eg_session, id, EG_HF_UINT, "id"),
	EG_HF(struct eg_session, name, EG_HF_STR, "name"),
	EG_HF(struct eg_session, uid, EG_HF_UINT, "uid"),
	EG_HF(struct eg_session, gid, EG_HF_UINT, "gid"),
	EG_HF(struct eg_session, launcher, EG_HF_INT, "launcher"),
	EG_HF(struct eg_session, restricted, EG_HF_BOOL, "restricted"),
	EG_HF(struct eg_session, attached, EG_HF_BOOL, "attached"),
	EG_HF(struct eg_session, first_seen, EG_HF_BOOL, "first_seen"),
	EG_HF(struct eg_session, compromised, EG_HF_BOOL, "compromised"),
	EG_HF(struct eg_session, execs, EG_HF_UINT, "execs"),
	EG_HF(struct eg_session, denied, EG_HF_UINT, "denied"),
	EG_HF(struct eg_session, access_denied, EG_HF_UINT, "access_denied"),
};

static const struct eg_hfield refusal_fields[] = {
	EG_HF(struct refusal, tid, EG_HF_UINT, "tid"),
	/* as hex: a 64-bit hash does not fit the JSON reader's signed integers */
	EG_HF(struct refusal, dev, EG_HF_HEX, "dev"),
	EG_HF(struct refusal, ino, EG_HF_HEX, "ino"),
	EG_HF(struct refusal, argv_hash, EG_HF_HEX, "argv_hash"),
	EG_HF(struct refusal, rule, EG_HF_STR, "rule"),
	EG_HF(struct refusal, message, EG_HF_STR, "message"),
	EG_HF(struct refusal, action, EG_HF_STR, "action"),
};

#define N(t) (sizeof(t) / sizeof((t)[0]))

/*
 * The refusals a shell's PATH search would repeat (supervisor.c) go along:
 * an exec the old daemon refused (its approval ended by the handover) and
 * asked again through the next PATH entry gets the same answer, not a new
 * question that approval_timeout_action: allow would let through.
 */
static void refusals_export(const struct eg_sessions *s, const struct eg_session *se, struct jsonw *w)
{
	uint64_t now = eg_mono_ns();
	unsigned int i;

	jsonw_key(w, "refusals");
	jsonw_start_array(w);
	for (i = 0; i < REFUSALS_MAX; i++) {
		const struct refusal *f = &s->refusals[i];

		if (f->session != se->id || !f->tid || now - f->at_ns >= REFUSAL_TTL_NS)
			continue;
		jsonw_start_object(w);
		eg_hf_write(w, f, refusal_fields, N(refusal_fields), NULL);
		jsonw_end_object(w);
	}
	jsonw_end_array(w);
}

static void refusals_import(struct eg_sessions *s, uint32_t session, const json_t *arr)
{
	const json_t *e;
	size_t i;

	json_array_foreach(arr, i, e) {
		struct refusal *f = &s->refusals[s->next_refusal++ % REFUSALS_MAX];

		eg_hf_read(e, f, refusal_fields, N(refusal_fields));
		f->session = session;
		/* from now: the retry has waited in the kernel for as long as the handover took */
		f->at_ns = eg_mono_ns();
	}
}

/*
 * Writes the sessions as a JSON array and collects the fds that must stay
 * open across the exec: each listener, and a memfd with each session
 * policy's bytes. Pending approvals are answered first as their timeout
 * would (the new daemon cannot take over a question half asked), and the
 * listeners leave the event loop: nothing is answered until the next
 * daemon reads them.
 */
int sessions_export(struct eg_sessions *s, struct jsonw *w, int *fds, int *nfds, int max)
{
	struct eg_session *se;

	/*
	 * The receivers go first: a notification one took must be answered
	 * here, the next daemon will not see it. What they and the workers
	 * still have is answered (or refused) before the listeners go.
	 */
	for (se = s->list; se; se = se->next)
		receiver_stop(s, se);
	receivers_wait(s, 2000);
	offload_quiesce(s, 2000);
	approvals_resolve_all(s, "the daemon restarted");
	jsonw_start_array(w);
	for (se = s->list; se; se = se->next) {
		if (se->w)
			loop_del(se->w);
		se->w = NULL;
		jsonw_start_object(w);
		eg_hf_write(w, se, session_fields, N(session_fields), NULL);
		jsonw_uint_field(w, "parent", se->parent ? se->parent->id : 0);
		jsonw_string_field(w, "boundary", se->boundary);
		jsonw_string_field(w, "exec_lists", se->exec_lists);
		if (se->redirect_dir)
			jsonw_string_field(w, "redirect_dir", se->redirect_dir);
		refusals_export(s, se, w);
		denials_export(s->denials, se->id, w);
		/* a listener that cannot go along is said so (its number would be another fd's) */
		if (se->listener >= 0 && *nfds < max) {
			jsonw_int_field(w, "listener", se->listener);
			fds[(*nfds)++] = se->listener;
		} else {
			jsonw_key(w, "listener");
			jsonw_null(w);
			if (se->listener >= 0)
				jsonw_bool_field(w, "listener_lost", true);
		}
		if (se->policy) {
			size_t len;
			const char *src = policy_source(se->policy, &len);

			/* a policy that cannot go along must not be dropped: the next daemon refuses instead */
			jsonw_bool_field(w, "has_policy", true);
			int fd = memfd_create("execgate-session-policy", MFD_CLOEXEC);

			if (fd >= 0 && write(fd, src, len) == (ssize_t)len && *nfds < max) {
				jsonw_int_field(w, "policy_fd", fd);
				fds[(*nfds)++] = fd;
			} else if (fd >= 0) {
				close(fd);
			}
		}
		jsonw_end_object(w);
	}
	jsonw_end_array(w);
	return 0;
}

/* The other side: sessions as the previous daemon left them (parents listed first or later). */
int sessions_import(struct eg_sessions *s, json_t *arr)
{
	json_t *e;
	size_t i;
	int rc = 0;

	json_array_foreach(arr, i, e) {
		struct eg_session *se = calloc(1, sizeof(*se));
		json_t *pf = json_object_get(e, "policy_fd");

		if (!se)
			return -ENOMEM;
		se->owner = s;
		eg_hf_read(e, se, session_fields, N(session_fields));
		refusals_import(s, se->id, json_object_get(e, "refusals"));
		denials_import(s->denials, se->id, json_object_get(e, "domains"));
		if (json_string_value(json_object_get(e, "boundary")))
			se->boundary = strdup(json_string_value(json_object_get(e, "boundary")));
		/* resolved when it opened; from a daemon that did not keep them: now */
		if (json_string_value(json_object_get(e, "exec_lists")))
			se->exec_lists = strdup(json_string_value(json_object_get(e, "exec_lists")));
		else if (se->boundary)
			se->exec_lists = boundary_exec_lists(se->boundary);
		/* its redirect directory (redirect.c) goes on with it: same pid, same path */
		if (json_string_value(json_object_get(e, "redirect_dir")))
			se->redirect_dir = strdup(json_string_value(json_object_get(e, "redirect_dir")));
		se->listener = json_integer_value(json_object_get(e, "listener"));
		if (json_is_null(json_object_get(e, "listener")))
			se->listener = -1;
		se->refs = 1;
		se->started_ns = eg_mono_ns();
		if (json_is_integer(pf)) {
			struct eg_diags d = {};
			int fd = json_integer_value(pf);

			lseek(fd, 0, SEEK_SET);
			if (policy_load_fd_flags(fd, "session policy", POLICY_LOAD_NO_FILES, &se->policy, &d))
				se->compromised = true;	/* fail closed: refuse its execs */
			else
				snprintf(se->policy_sha, sizeof(se->policy_sha), "%s", policy_sha256(se->policy));
			eg_diags_free(&d);
			close(fd);
		} else if (json_is_true(json_object_get(e, "has_policy"))) {
			se->compromised = true;	/* its policy did not come along: refuse its execs */
		}
		if (se->listener >= 0) {
			int e;

			fcntl(se->listener, F_SETFD, FD_CLOEXEC);
			e = listener_watch(s, se, se->listener);
			if (e)
				rc = e;
		}
		se->next = s->list;
		s->list = se;
		sweep_arm(s);
		s->nsessions++;
		s->st.sessions_active++;
	}
	/* parents by id, now that all are here */
	json_array_foreach(arr, i, e) {
		struct eg_session *se = session_find(s, json_integer_value(json_object_get(e, "id")));
		struct eg_session *pa = session_find(s, json_integer_value(json_object_get(e, "parent")));

		if (se && pa) {
			se->parent = pa;
			pa->refs++;
		}
	}
	/*
	 * A top-level session with no listener here ends, with the sessions
	 * started inside it: one whose listener could not be handed over (its
	 * execs fail with ENOSYS), or one opened but not yet attached (its
	 * launcher's connection is gone with the old daemon): nothing would
	 * ever end it, and it held its place among the user's sessions.
	 */
	json_array_foreach(arr, i, e) {
		struct eg_session *se = session_find(s, json_integer_value(json_object_get(e, "id")));

		if (se && !se->parent && se->listener < 0 && !se->ended)
			session_end(s, se, json_is_true(json_object_get(e, "listener_lost")) ?
				    "its listener could not be handed to this daemon" :
				    "not attached when the daemon was restarted");
	}
	json_array_foreach(arr, i, e) {
		struct eg_session *se = session_find(s, json_integer_value(json_object_get(e, "id"))), *up;

		for (up = se ? se->parent : NULL; up && up->parent; up = up->parent)
			;
		if (se && up && up->ended && !se->ended)
			session_end(s, se, "the session it was started in ended");
	}
	return rc;
}

void sessions_resume(struct eg_sessions *s)
{
	struct eg_session *se;

	for (se = s->list; se; se = se->next)
		if (!se->w && se->listener >= 0)
			listener_watch(s, se, se->listener);
}
