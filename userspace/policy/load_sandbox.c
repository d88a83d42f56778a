// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The session settings (sandbox.seccomp.execve: argv limits, truncation,
 * approvals, internal_bypass) and the session's boundary (filesystem:,
 * network:, environment:), as the policy file spells them.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "policy/loader.h"
#include "util/severity.h"

static int parse_execve(struct loader *l)
{
	struct eg_policy_settings *s = &l->p->settings;
	struct yr_map it;
	long long v;
	int k = 0, rc = 0;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "execve", "a mapping");
	yr_map_begin(&l->y, &it, execve_keys, "in sandbox.seccomp.execve");
	while (rc >= 0 && (k = yr_map_next(&l->y, &it)) >= 0) {
		switch (k) {
		case EX_ENABLED:
			rc = yr_get_bool(&l->y, "enabled", &s->execve_enabled);
			break;
		case EX_MAX_ARGC:
			rc = yr_get_int(&l->y, "max_argc", 1, INT32_MAX, &v);
			if (!rc)
				s->max_argc = (uint32_t)v;
			break;
		case EX_MAX_ARGV_BYTES:
			rc = yr_get_int(&l->y, "max_argv_bytes", 1, INT32_MAX, &v);
			if (!rc)
				s->max_argv_bytes = (uint32_t)v;
			break;
		case EX_ON_TRUNCATED:
			l->p->on_truncated_pos = yr_ev_pos(&l->y);
			rc = load_decision(l, "on_truncated",
					  1u << EG_DECISION_DENY | 1u << EG_DECISION_ALLOW | 1u << EG_DECISION_APPROVAL,
					  &s->on_truncated);
			break;
		case EX_APPROVAL_TIMEOUT: {
			uint64_t ms;

			l->p->approval_timeout_pos = yr_ev_pos(&l->y);
			if (!yr_is_scalar(&l->y) || yr_is_null(&l->y)) {
				rc = yr_wrong_type(&l->y, "approval_timeout", "a duration (10s, 500ms, 2m)");
				break;
			}
			if (eg_parse_duration_ms(yr_sval(&l->y), &ms)) {
				yr_err(&l->y, yr_ev_pos(&l->y), "'approval_timeout' must be a duration like 10s, 500ms, 2m or 1m30s "
				    "(a plain number is seconds), got '%.64s'", yr_sval(&l->y));
			} else if (ms < 1 || ms > 24ull * 3600 * 1000) {
				yr_err(&l->y, yr_ev_pos(&l->y), "'approval_timeout' must be from 1ms to 24h, got '%.64s'", yr_sval(&l->y));
			} else {
				s->approval_timeout_ms = ms;
				s->approval_timeout_set = true;
			}
			break;
		}
		case EX_APPROVAL_TIMEOUT_ACTION: {
			enum eg_decision d = EG_DECISION_DENY;

			rc = load_decision(l, "approval_timeout_action",
					  1u << EG_DECISION_DENY | 1u << EG_DECISION_ALLOW, &d);
			s->approval_timeout_action = d == EG_DECISION_ALLOW ? EG_TIMEOUT_ALLOW : EG_TIMEOUT_DENY;
			break;
		}
		case EX_ON_ERROR:
			rc = load_decision(l, "on_error",
					  1u << EG_DECISION_DENY | 1u << EG_DECISION_ALLOW | 1u << EG_DECISION_APPROVAL,
					  &s->on_error);
			break;
		case EX_INTERNAL_BYPASS:
			l->p->bypass_pos = yr_ev_pos(&l->y);
			rc = yr_each_item(&l->y, "internal_bypass", "a list of paths or globs", load_strv_item, &l->p->bypass);
			break;
		}
		if (l->y.fatal)
			return -EINVAL;
	}
	return (rc < 0 || k == -2) ? -EINVAL : 0;
}

static int parse_unix_socket(struct loader *l)
{
	struct yr_map it;
	bool ignored;
	int k;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "unix_socket", "a mapping");
	yr_map_begin(&l->y, &it, unix_socket_keys, "in sandbox.seccomp.unix_socket");
	while ((k = yr_map_next(&l->y, &it)) >= 0)
		if (yr_get_bool(&l->y, "enabled", &ignored))
			return -EINVAL;
	return k == -2 ? -EINVAL : 0;
}

static int parse_seccomp(struct loader *l)
{
	struct yr_map it;
	bool ignored;
	int k = 0, rc = 0;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "seccomp", "a mapping");
	yr_map_begin(&l->y, &it, seccomp_keys, "in sandbox.seccomp");
	while (!rc && (k = yr_map_next(&l->y, &it)) >= 0) {
		switch (k) {
		case SECCOMP_ENABLED:
			/* Accepted for compatibility with agent sandbox configs; execgate decides per session. */
			rc = yr_get_bool(&l->y, "enabled", &ignored);
			break;
		case SECCOMP_UNIX_SOCKET:
			rc = parse_unix_socket(l);
			break;
		case SECCOMP_EXECVE:
			rc = parse_execve(l);
			break;
		}
	}
	return (rc || k == -2) ? -EINVAL : 0;
}

int load_sandbox(struct loader *l)
{
	struct yr_map it;
	int k;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "sandbox", "a mapping");
	yr_map_begin(&l->y, &it, sandbox_keys, "in sandbox");
	while ((k = yr_map_next(&l->y, &it)) >= 0)
		if (parse_seccomp(l))
			return -EINVAL;
	return k == -2 ? -EINVAL : 0;
}

/* ---- the session's boundary: filesystem:, network:, environment: -------- */

/* Like each_item, but an empty list is a list that allows nothing. */
static int boundary_list(struct loader *l, const char *what, const char *want,
			 int (*item)(struct yreader *y, const char *what, void *ctx), void *ctx)
{
	if (l->y.ev.type != YAML_SEQUENCE_START_EVENT)
		return yr_wrong_type(&l->y, what, want);
	for (;;) {
		if (yr_next(&l->y))
			return -EINVAL;
		if (l->y.ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (!yr_is_scalar(&l->y) || yr_is_null(&l->y)) {
			yr_err(&l->y, yr_ev_pos(&l->y), "items of '%s' must be single values (%s), got %s", what, want,
			       yr_kind(&l->y));
			if (yr_skip(&l->y))
				return -EINVAL;
			continue;
		}
		if (item(&l->y, what, ctx))
			return -EINVAL;
	}
}

/* An absolute path, or the word workspace (the session's, given when it starts). */
static int fs_path_item(struct yreader *y, const char *what, void *ctx)
{
	struct loader *l = LOADER(y);
	struct eg_pos pos = yr_ev_pos(&l->y);
	char *s = yr_get_string(&l->y, what, false);

	if (!s)
		return l->y.fatal ? -EINVAL : 0;
	if (s[0] != '/' && strcmp(s, "workspace")) {
		yr_err(&l->y, pos, "'%s' lists absolute paths or the word workspace, got '%.64s'", what, s);
		free(s);
		return 0;
	}
	return load_strv_push(l, ctx, s, pos);
}

struct port_list {
	uint16_t **v;
	size_t *n;
};

static int port_item(struct yreader *y, const char *what, void *ctx)
{
	struct loader *l = LOADER(y);
	struct port_list *pl = ctx;
	long long v;
	uint16_t *nv;
	int rc;

	if (yr_count_item(&l->y, yr_ev_pos(&l->y)))
		return -EINVAL;
	rc = yr_get_int(&l->y, what, 0, 65535, &v);
	if (rc)
		return rc < 0 ? -EINVAL : 0;
	nv = realloc(*pl->v, (*pl->n + 1) * sizeof(**pl->v));
	if (!nv) {
		yr_oom(&l->y);
		return -ENOMEM;
	}
	nv[(*pl->n)++] = (uint16_t)v;
	*pl->v = nv;
	return 0;
}

/* A variable name or an fnmatch glob on names, kept upper case (names compare so). */
static int env_item(struct yreader *y, const char *what, void *ctx)
{
	struct loader *l = LOADER(y);
	struct eg_pos pos = yr_ev_pos(&l->y);
	char *s = yr_get_string(&l->y, what, false), *c;

	if (!s)
		return l->y.fatal ? -EINVAL : 0;
	if (strchr(s, '=')) {
		yr_err(&l->y, pos, "'%s' lists variable names (or globs), without '=': got '%.64s'", what, s);
		free(s);
		return 0;
	}
	for (c = s; *c; c++)
		*c = toupper((unsigned char)*c);
	return load_strv_push(l, ctx, s, pos);
}

int load_filesystem(struct loader *l)
{
	struct eg_policy *p = l->p;
	struct yr_map it;
	int k = 0, rc = 0;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "filesystem", "a mapping with read, write and execute lists");
	p->boundary.filesystem = true;
	yr_map_begin(&l->y, &it, filesystem_keys, "in filesystem");
	while (!rc && (k = yr_map_next(&l->y, &it)) >= 0) {
		struct eg_strv *v = k == FS_READ ? &p->fs_read : k == FS_WRITE ? &p->fs_write : &p->fs_execute;
		struct eg_ll_paths *lp = k == FS_READ ? &p->boundary.layer.read :
					 k == FS_WRITE ? &p->boundary.layer.write : &p->boundary.layer.execute;

		lp->set = true;
		rc = boundary_list(l, filesystem_keys[k], "a list of absolute paths", fs_path_item, v);
	}
	return (rc || k == -2) ? -EINVAL : 0;
}

int load_network(struct loader *l)
{
	struct eg_policy *p = l->p;
	struct yr_map it;
	int k = 0, rc = 0;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "network", "a mapping with connect_tcp and bind_tcp lists of ports");
	p->boundary.network = true;
	yr_map_begin(&l->y, &it, network_keys, "in network");
	while (!rc && (k = yr_map_next(&l->y, &it)) >= 0) {
		struct port_list pl = { k == NET_CONNECT_TCP ? &p->connect_tcp : &p->bind_tcp,
					k == NET_CONNECT_TCP ? &p->n_connect_tcp : &p->n_bind_tcp };

		if (k == NET_CONNECT_TCP)
			p->boundary.layer.connect_tcp.set = true;
		else
			p->boundary.layer.bind_tcp.set = true;
		rc = boundary_list(l, network_keys[k], "a list of TCP ports", port_item, &pl);
	}
	return (rc || k == -2) ? -EINVAL : 0;
}

int load_environment(struct loader *l)
{
	struct yr_map it;
	int k = 0, rc = 0;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "environment", "a mapping with a deny list");
	yr_map_begin(&l->y, &it, environment_keys, "in environment");
	while (!rc && (k = yr_map_next(&l->y, &it)) >= 0)
		rc = boundary_list(l, "deny", "a list of variable names", env_item, &l->p->env_deny);
	return (rc || k == -2) ? -EINVAL : 0;
}

/* The views policy_boundary() gives, once the lists stopped moving. */
void load_boundary_views(struct eg_policy *p)
{
	struct eg_ll_layer *ly = &p->boundary.layer;

	ly->read.v = (const char *const *)p->fs_read.v;
	ly->read.n = p->fs_read.n;
	ly->write.v = (const char *const *)p->fs_write.v;
	ly->write.n = p->fs_write.n;
	ly->execute.v = (const char *const *)p->fs_execute.v;
	ly->execute.n = p->fs_execute.n;
	ly->connect_tcp.v = p->connect_tcp;
	ly->connect_tcp.n = p->n_connect_tcp;
	ly->bind_tcp.v = p->bind_tcp;
	ly->bind_tcp.n = p->n_bind_tcp;
	p->boundary.env_deny = (const char *const *)p->env_deny.v;
	p->boundary.n_env_deny = p->env_deny.n;
}
