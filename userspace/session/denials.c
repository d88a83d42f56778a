// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the sessions' Landlock domains refused, counted per session. The
 * kernel (Landlock ABI 7) logs each refusal to audit, when audit is on:
 * an AUDIT_LANDLOCK_ACCESS record ("domain=ID blockers=fs.write_file
 * path=... ") and, the first time a domain shows, an AUDIT_LANDLOCK_DOMAIN
 * record naming the process that made it ("domain=ID status=allocated
 * ... pid=N"), which is a session's launcher. The daemon reads audit's
 * multicast group (CAP_AUDIT_READ; auditd keeps its own copy) and counts
 * each refusal in the session whose layer refused it. With audit off the
 * kernel counts them only for itself: then nothing is counted here, and
 * status says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include "loop/loop.h"
#include "events/meta.h"
#include "session/denials.h"
#include "util/clock.h"
#include "util/landlock.h"
#include "util/sbuf.h"

#ifndef AUDIT_LANDLOCK_ACCESS
#define AUDIT_LANDLOCK_ACCESS	1423
#define AUDIT_LANDLOCK_DOMAIN	1424
#endif
#ifndef AUDIT_NLGRP_READLOG
#define AUDIT_NLGRP_READLOG	1
#endif

#define DOMAINS_MAX		4096	/* domains known (a session makes one or two) */
#define HELD_MAX		64	/* refusals waiting for their domain's record */
#define HELD_NS			(2ull * 1000000000ull)
#define RECORDS_PER_SESSION	100	/* refusals written as records; all are counted */

struct domain {
	uint64_t id;
	uint32_t session;
};

struct held {
	uint64_t domain;
	uint64_t at_ns;
	char *text;
};

struct eg_denials {
	struct eg_denials_opts o;
	int fd;
	struct eg_watch *w;
	char why[160];			/* why nothing is counted, or "" */
	struct domain domains[DOMAINS_MAX];
	unsigned int next_domain;
	struct held held[HELD_MAX];
	unsigned int nheld;
	uint64_t unattributed;		/* refusals of domains no session of ours made */
	uint64_t lost;			/* records the socket had no room for */
};

static bool field_hex(const char *text, const char *key, uint64_t *ret)
{
	const char *p = strstr(text, key);
	char *end;

	if (!p)
		return false;
	*ret = strtoull(p + strlen(key), &end, 16);
	return end != p + strlen(key);
}

static bool field_int(const char *text, const char *key, long *ret)
{
	const char *p = strstr(text, key);
	char *end;

	if (!p)
		return false;
	*ret = strtol(p + strlen(key), &end, 10);
	return end != p + strlen(key);
}

/* The session that made domain id (0 when none of ours did, or it is not known yet). */
static uint32_t session_of_domain(struct eg_denials *d, uint64_t id)
{
	unsigned int i;

	for (i = 0; i < DOMAINS_MAX; i++)
		if (d->domains[i].id == id)
			return d->domains[i].session;
	return 0;
}

/*
 * One refusal, in session sid: counted, and a record for its first
 * RECORDS_PER_SESSION. A session that has ended already (audit is
 * asynchronous) still gets its record, with no count.
 */
static void count(struct eg_denials *d, uint32_t sid, uint64_t domain, const char *text)
{
	uint64_t n = d->o.counted(d->o.arg, sid);
	const char *blk = strstr(text, "blockers="), *detail;
	struct sbuf b = {};
	struct jsonw w;
	char name[16], dom[24], blockers[128], line[256];
	size_t k;

	if (n > RECORDS_PER_SESSION)
		return;
	blockers[0] = '\0';
	detail = NULL;
	if (blk) {
		blk += strlen("blockers=");
		k = strcspn(blk, " ");
		snprintf(blockers, sizeof(blockers), "%.*s", (int)k, blk);
		detail = blk[k] ? blk + k + 1 : NULL;
	}
	snprintf(name, sizeof(name), "s-%x", sid);
	snprintf(dom, sizeof(dom), "%llx", (unsigned long long)domain);
	meta_open(&w, &b, "boundary");
	jsonw_string_field(&w, "event", "denied");
	jsonw_string_field(&w, "session", name);
	jsonw_string_field(&w, "blockers", blockers);
	/* what audit says of the object (a path, an address and port, a process): untrusted text */
	jsonw_string_field(&w, "object", detail);
	jsonw_string_field(&w, "domain", dom);
	jsonw_key(&w, "count");
	if (n)
		jsonw_uint(&w, n);
	else
		jsonw_null(&w);
	jsonw_end_object(&w);
	sbuf_putc(&b, '\n');
	snprintf(line, sizeof(line), "boundary %s denied %s %.160s", name, blockers, detail ? detail : "");
	if (!b.oom)
		d->o.emit(d->o.arg, b.data, b.len, line);
	sbuf_free(&b);
}

static void held_drop(struct eg_denials *d, unsigned int i)
{
	free(d->held[i].text);
	d->held[i] = d->held[--d->nheld];
}

static void on_domain(struct eg_denials *d, const char *text)
{
	uint32_t sid;
	uint64_t id;
	long pid;
	unsigned int i;

	if (!strstr(text, "status=allocated") || !field_hex(text, "domain=", &id) ||
	    !field_int(text, " pid=", &pid) || session_of_domain(d, id))
		return;
	/* made by a session's launcher: the only domains ours are */
	sid = d->o.session_of_launcher(d->o.arg, (pid_t)pid);
	if (!sid)
		return;
	d->domains[d->next_domain].id = id;
	d->domains[d->next_domain].session = sid;
	d->next_domain = (d->next_domain + 1) % DOMAINS_MAX;
	for (i = 0; i < d->nheld;) {
		if (d->held[i].domain == id) {
			count(d, sid, id, d->held[i].text);
			held_drop(d, i);
		} else {
			i++;
		}
	}
}

static void on_access(struct eg_denials *d, const char *text)
{
	uint64_t id, now = eg_mono_ns();
	unsigned int i;
	uint32_t sid;

	if (!field_hex(text, "domain=", &id))
		return;
	sid = session_of_domain(d, id);
	if (sid) {
		count(d, sid, id, text);
		return;
	}
	/* the domain's own record comes right after its first refusal */
	for (i = 0; i < d->nheld;) {
		if (now - d->held[i].at_ns > HELD_NS) {
			d->unattributed++;
			held_drop(d, i);
		} else {
			i++;
		}
	}
	if (d->nheld == HELD_MAX) {
		d->unattributed++;
		held_drop(d, 0);
	}
	d->held[d->nheld].domain = id;
	d->held[d->nheld].at_ns = now;
	d->held[d->nheld].text = strdup(text);
	if (d->held[d->nheld].text)
		d->nheld++;
}

/* The next netlink message of the len bytes at p, or NULL (NLMSG_OK, without its signed compares). */
static const struct nlmsghdr *msg_at(const char *p, size_t len)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)p;

	if (len < NLMSG_HDRLEN || h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > len)
		return NULL;
	return h;
}

static void drain(struct eg_denials *d, int fd, int rounds)
{
	static char buf[65536], text[8192];
	int round;

	for (round = 0; round < rounds; round++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		const struct nlmsghdr *h;
		size_t off = 0;

		if (n < 0) {
			if (errno == ENOBUFS)
				d->lost++;	/* the socket overflowed: some records are gone */
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			return;
		}
		/* the last message's padding may not be in the datagram */
		for (; off < (size_t)n && (h = msg_at(buf + off, (size_t)n - off)); off += NLMSG_ALIGN(h->nlmsg_len)) {
			size_t tl = h->nlmsg_len - NLMSG_HDRLEN;
			char *body;

			if (h->nlmsg_type != AUDIT_LANDLOCK_ACCESS && h->nlmsg_type != AUDIT_LANDLOCK_DOMAIN)
				continue;
			if (tl >= sizeof(text))
				tl = sizeof(text) - 1;
			memcpy(text, (const char *)h + NLMSG_HDRLEN, tl);
			text[tl] = '\0';
			/* "audit(SECONDS.MS:SERIAL): domain=..." */
			body = strstr(text, "): ");
			body = body ? body + 3 : text;
			if (h->nlmsg_type == AUDIT_LANDLOCK_DOMAIN)
				on_domain(d, body);
			else
				on_access(d, body);
		}
	}
}

static void on_audit(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	(void)w;
	(void)events;
	drain(arg, fd, 64);
}

void denials_export(const struct eg_denials *d, uint32_t session, struct jsonw *w)
{
	unsigned int i;
	char id[24];

	jsonw_key(w, "domains");
	jsonw_start_array(w);
	for (i = 0; d && i < DOMAINS_MAX; i++) {
		if (!d->domains[i].id || d->domains[i].session != session)
			continue;
		snprintf(id, sizeof(id), "%llx", (unsigned long long)d->domains[i].id);
		jsonw_string(w, id);
	}
	jsonw_end_array(w);
}

void denials_import(struct eg_denials *d, uint32_t session, const json_t *arr)
{
	const json_t *v;
	size_t i;

	json_array_foreach(arr, i, v) {
		uint64_t id = json_string_value(v) ? strtoull(json_string_value(v), NULL, 16) : 0;

		if (!d || !id || session_of_domain(d, id))
			continue;
		d->domains[d->next_domain].id = id;
		d->domains[d->next_domain].session = session;
		d->next_domain = (d->next_domain + 1) % DOMAINS_MAX;
	}
}

void denials_drain(struct eg_denials *d)
{
	if (d && d->fd >= 0)
		drain(d, d->fd, 16);
}

int denials_new(const struct eg_denials_opts *o, struct eg_denials **ret)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1u << (AUDIT_NLGRP_READLOG - 1) };
	struct eg_denials *d = calloc(1, sizeof(*d));
	int rcv = 1 << 20;

	if (!d)
		return -ENOMEM;
	d->o = *o;
	d->fd = -1;
	*ret = d;
	if (o->landlock_abi < EG_LL_ABI_AUDIT) {
		snprintf(d->why, sizeof(d->why), "the kernel logs Landlock's refusals from ABI %d on; it has %d",
			 EG_LL_ABI_AUDIT, o->landlock_abi);
		return 0;
	}
	d->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
	if (d->fd < 0 || bind(d->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(d->why, sizeof(d->why), "cannot read audit's log (%s%s)", strerror(errno),
			 errno == EPERM ? ": the daemon needs CAP_AUDIT_READ" : "");
		if (d->fd >= 0)
			close(d->fd);
		d->fd = -1;
		return 0;
	}
	setsockopt(d->fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	return loop_add_fd(o->loop, d->fd, EPOLLIN, on_audit, d, &d->w);
}

void denials_free(struct eg_denials *d)
{
	if (!d)
		return;
	loop_del(d->w);
	if (d->fd >= 0)
		close(d->fd);
	while (d->nheld)
		held_drop(d, 0);
	free(d);
}

/*
 * Whether audit is on, asked of the kernel (AUDIT_GET: CAP_AUDIT_CONTROL).
 * 1 on, 0 off, -errno when it cannot be told.
 */
static int audit_enabled(void)
{
	struct {
		struct nlmsghdr h;
		char pad[256];
	} msg = { .h = { .nlmsg_len = NLMSG_LENGTH(0), .nlmsg_type = AUDIT_GET,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK, .nlmsg_seq = 1 } };
	struct timeval tv = { .tv_usec = 200000 };
	char buf[1024];
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT), rc = -EIO, i;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, &msg, msg.h.nlmsg_len, 0) < 0) {
		rc = -errno;
		goto out;
	}
	for (i = 0; i < 4; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (n < 0) {
			rc = -errno;
			break;
		}
		if (!msg_at(buf, (size_t)n))
			break;
		if (h->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(h);

			if (e->error) {
				rc = e->error;
				break;
			}
			continue;	/* the ack; the status follows */
		}
		if (h->nlmsg_type == AUDIT_GET && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct audit_status))) {
			rc = ((struct audit_status *)NLMSG_DATA(h))->enabled ? 1 : 0;
			break;
		}
	}
out:
	close(fd);
	return rc;
}

void denials_status(const struct eg_denials *d, struct jsonw *w)
{
	int on;

	jsonw_start_object(w);
	if (!d || d->fd < 0) {
		jsonw_bool_field(w, "counted", false);
		jsonw_string_field(w, "why", d ? d->why : "not started");
	} else {
		on = audit_enabled();
		jsonw_bool_field(w, "counted", on != 0);
		jsonw_key(w, "audit_enabled");
		if (on < 0)
			jsonw_null(w);
		else
			jsonw_bool(w, on);
		jsonw_string_field(w, "why", on == 0 ? "audit is off: the kernel logs no refusal (auditctl -e 1, "
				   "or run auditd)" : NULL);
		jsonw_uint_field(w, "unattributed", d->unattributed);
		jsonw_uint_field(w, "lost", d->lost);
	}
	jsonw_end_object(w);
}
