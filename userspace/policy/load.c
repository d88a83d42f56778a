// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * YAML -> compiled policy. libyaml's event API, pulled one event at a time
 * against the fixed schema in policy/README.md: no document tree is built,
 * aliases are refused (no "billion laughs"), nesting is capped, so memory
 * follows the rules and not the shape of the input. Errors do not stop the
 * walk (the user sees them all at once), except those after which libyaml
 * cannot go on.
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

const char *const root_keys[] = { "sandbox", "commands", "default_decision", "unknown_depth",
					 "kernel_approval", "contexts", "filesystem", "network", "environment",
					 "on_unsupported", NULL };
const char *const filesystem_keys[] = { "read", "write", "execute", NULL };
const char *const network_keys[] = { "connect_tcp", "bind_tcp", NULL };
const char *const environment_keys[] = { "deny", NULL };
const char *const sandbox_keys[] = { "seccomp", NULL };
const char *const seccomp_keys[] = { "enabled", "unix_socket", "execve", NULL };
const char *const unix_socket_keys[] = { "enabled", NULL };
const char *const execve_keys[] = {
	"enabled", "max_argc", "max_argv_bytes", "on_truncated", "approval_timeout",
	"approval_timeout_action", "internal_bypass", "on_error", NULL
};
const char *const rule_keys[] = {
	"name", "basenames", "paths", "args_patterns", "args", "context", "cgroups", "uids",
	"decision", "message", "severity", "tags", "contexts", "redirect_to", NULL
};
static const char *const redirect_keys[] = { "command", "args", NULL };
const char *const actx_keys[] = { "name", "identities", "limits", NULL };
const char *const limit_keys[] = { "max_depth", "max_consecutive_shells", NULL };
const char *const context_keys[] = { "min_depth", "max_depth", NULL };

/* Where each mapping lives, to say "'x' belongs under ..." for a misplaced key. */
static const struct yr_place all_maps[] = {
	{ "the top level", root_keys },
	{ "sandbox", sandbox_keys },
	{ "sandbox.seccomp", seccomp_keys },
	{ "sandbox.seccomp.unix_socket", unix_socket_keys },
	{ "sandbox.seccomp.execve", execve_keys },
	{ "a rule (an item of commands)", rule_keys },
	{ "a rule's context mapping", context_keys },
	{ "a rule's redirect_to", redirect_keys },
	{ "a context (an item of contexts)", actx_keys },
	{ "a context's limits", limit_keys },
	{ "filesystem", filesystem_keys },
	{ "network", network_keys },
	{ "environment", environment_keys },
};

/* The reader's errors, as the policy's diagnostics (FILE:LINE:COL). */
static void report(void *arg, struct eg_pos pos, const char *msg)
{
	struct loader *l = arg;

	eg_diag_add(l->diags, l->file, pos, false, "%s", msg);
}




/* "[a,a,a,...]": 2 bytes of YAML, 50 of memory each. */



static int parse_root(struct loader *l)
{
	struct yr_map it;
	int k = 0, rc = 0;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT) {
		yr_err(&l->y, yr_ev_pos(&l->y), "a policy is a mapping with 'commands', 'default_decision' and 'sandbox' "
		    "at the top level; this file holds %s", yr_kind(&l->y));
		return yr_skip(&l->y);
	}
	yr_map_begin(&l->y, &it, root_keys, "at the top level");
	while (!rc && (k = yr_map_next(&l->y, &it)) >= 0) {
		switch (k) {
		case ROOT_SANDBOX:
			rc = load_sandbox(l);
			break;
		case ROOT_COMMANDS:
			rc = load_commands(l);
			break;
		case ROOT_DEFAULT_DECISION:
			l->p->default_decision_pos = yr_ev_pos(&l->y);
			rc = load_decision(l, "default_decision", ALL_DECISIONS, &l->p->settings.default_decision);
			break;
		case ROOT_UNKNOWN_DEPTH:
			rc = load_word(l, "unknown_depth", "nested", "direct", &l->p->settings.unknown_depth_direct);
			break;
		case ROOT_KERNEL_APPROVAL:
			rc = load_word(l, "kernel_approval", "deny", "audit", &l->p->settings.kernel_approval_audit);
			break;
		case ROOT_CONTEXTS:
			rc = load_contexts(l);
			break;
		case ROOT_FILESYSTEM:
			rc = load_filesystem(l);
			break;
		case ROOT_NETWORK:
			rc = load_network(l);
			break;
		case ROOT_ENVIRONMENT:
			rc = load_environment(l);
			break;
		case ROOT_ON_UNSUPPORTED:
			rc = load_word(l, "on_unsupported", "deny", "allow", &l->p->boundary.on_unsupported_allow);
			break;
		}
	}
	return (rc || k == -2) ? -EINVAL : 0;
}

static int parse_stream(struct loader *l)
{
	if (yr_next(&l->y))
		return -EINVAL;			/* STREAM_START */
	if (yr_next(&l->y))
		return -EINVAL;
	if (l->y.ev.type == YAML_STREAM_END_EVENT) {
		yr_err(&l->y, (struct eg_pos){ 1, 1 }, "the policy is empty; write at least 'commands: []'");
		return -EINVAL;
	}
	if (yr_next(&l->y))				/* DOCUMENT_START -> the root node */
		return -EINVAL;
	if (parse_root(l))
		return -EINVAL;
	if (yr_next(&l->y))				/* DOCUMENT_END */
		return -EINVAL;
	if (yr_next(&l->y))
		return -EINVAL;
	if (l->y.ev.type == YAML_DOCUMENT_START_EVENT) {
		yr_err(&l->y, yr_ev_pos(&l->y), "a policy file holds one YAML document; this is a second one");
		return -EINVAL;
	}
	return 0;
}


int policy_load_buf(const char *buf, size_t len, const char *name,
		    struct eg_policy **ret_policy, struct eg_diags *diags)
{
	return policy_load_buf_flags(buf, len, name, 0, ret_policy, diags);
}

/* each load its number: the same text loaded again (its files changed) is another load */
static uint64_t load_seq;

int policy_load_buf_flags(const char *buf, size_t len, const char *name, unsigned int flags,
			  struct eg_policy **ret_policy, struct eg_diags *diags)
{
	struct loader l = {};
	struct eg_policy *p;
	int rc;

	if (!name)
		name = "<policy>";
	if (len > EG_POLICY_MAX_BYTES) {
		eg_diag_add(diags, name, (struct eg_pos){}, false,
			    "the policy is %zu bytes; the limit is %u MiB", len, EG_POLICY_MAX_BYTES >> 20);
		return -EFBIG;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		eg_diag_add(diags, name, (struct eg_pos){}, false, "out of memory");
		return -ENOMEM;
	}
	load_settings_defaults(&p->settings);
	p->no_files = flags & POLICY_LOAD_NO_FILES;
	p->load_seq = __atomic_add_fetch(&load_seq, 1, __ATOMIC_RELAXED);
	sha256_hex(buf, len, p->sha256);
	/* kept: a daemon handing a session over passes its policy on as it was */
	p->source = malloc(len ? len : 1);
	if (!p->source) {
		eg_diag_add(diags, name, (struct eg_pos){}, false, "out of memory");
		free(p);
		return -ENOMEM;
	}
	memcpy(p->source, buf, len);
	p->source_len = len;

	l.file = name;
	l.diags = diags;
	l.p = p;
	l.top = p;
	l.y.report = report;
	l.y.report_arg = &l;
	l.y.places = all_maps;
	l.y.nplaces = sizeof(all_maps) / sizeof(all_maps[0]);
	l.y.max_nest = EG_POLICY_MAX_NEST;
	l.y.max_items = EG_POLICY_MAX_ITEMS;
	l.y.max_string = EG_POLICY_MAX_PATTERN;
	if (yr_init(&l.y, buf, len)) {
		eg_diag_add(diags, name, (struct eg_pos){}, false, "out of memory");
		policy_free(p);
		return -ENOMEM;
	}
	rc = parse_stream(&l);
	l.p = p;
	if (!rc)
		load_resolve_contexts(&l);
	yr_fini(&l.y);
	eg_htab_free(&l.names);
	load_boundary_views(p);
	if (!rc && !l.y.nerr) {
		rc = eg_policy_compile(p);
		if (!rc && p->idents)
			rc = eg_policy_compile(p->idents);
		if (rc)
			yr_oom(&l.y);
	}
	if (rc || l.y.nerr) {
		if (!l.y.nerr)
			yr_err(&l.y, (struct eg_pos){}, "cannot load the policy");
		policy_free(p);
		return l.y.oom ? -ENOMEM : -EINVAL;
	}
	eg_policy_lint(p, name, diags);
	*ret_policy = p;
	return 0;
}

int policy_load_fd(int fd, const char *path, struct eg_policy **ret_policy, struct eg_diags *diags)
{
	return policy_load_fd_flags(fd, path, 0, ret_policy, diags);
}

int policy_load_fd_flags(int fd, const char *path, unsigned int flags, struct eg_policy **ret_policy,
			 struct eg_diags *diags)
{
	size_t len = 0, cap;
	struct stat st;
	char *buf;
	int rc;

	if (fstat(fd, &st)) {
		rc = -errno;
		eg_diag_add(diags, path, (struct eg_pos){}, false, "cannot stat: %s", strerror(-rc));
		return rc;
	}
	if (S_ISDIR(st.st_mode)) {
		eg_diag_add(diags, path, (struct eg_pos){}, false, "is a directory, not a policy file");
		return -EISDIR;
	}
	if (S_ISREG(st.st_mode) && st.st_size > (off_t)EG_POLICY_MAX_BYTES) {
		eg_diag_add(diags, path, (struct eg_pos){}, false,
			    "the file is %lld bytes; policies are limited to %u MiB",
			    (long long)st.st_size, EG_POLICY_MAX_BYTES >> 20);
		return -EFBIG;
	}
	/* Pipes and /proc files report no size: read up to the limit plus one byte. */
	cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536;
	buf = malloc(cap);
	if (!buf) {
		eg_diag_add(diags, path, (struct eg_pos){}, false, "out of memory");
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap > EG_POLICY_MAX_BYTES) {
				eg_diag_add(diags, path, (struct eg_pos){}, false,
					    "the file is larger than %u MiB, the limit for a policy",
					    EG_POLICY_MAX_BYTES >> 20);
				free(buf);
				return -EFBIG;
			}
			cap = cap * 2 > EG_POLICY_MAX_BYTES + 1 ? EG_POLICY_MAX_BYTES + 1 : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				eg_diag_add(diags, path, (struct eg_pos){}, false, "out of memory");
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			eg_diag_add(diags, path, (struct eg_pos){}, false, "cannot read: %s", strerror(-rc));
			free(buf);
			return rc;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > EG_POLICY_MAX_BYTES) {
		eg_diag_add(diags, path, (struct eg_pos){}, false,
			    "the file is larger than %u MiB, the limit for a policy", EG_POLICY_MAX_BYTES >> 20);
		free(buf);
		return -EFBIG;
	}
	rc = policy_load_buf_flags(buf, len, path, flags, ret_policy, diags);
	free(buf);
	return rc;
}

int policy_load_file(const char *path, struct eg_policy **ret_policy, struct eg_diags *diags)
{
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		eg_diag_add(diags, path, (struct eg_pos){}, false, "cannot open: %s", strerror(-rc));
		return rc;
	}
	rc = policy_load_fd(fd, path, ret_policy, diags);
	close(fd);
	return rc;
}
