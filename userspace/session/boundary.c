// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A session's Landlock layers: planned by the daemon, entered by the launcher (session/boundary.h). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "session/boundary.h"
#include "util/landlock.h"

static void paths_json(struct jsonw *w, const char *key, const struct eg_ll_paths *p)
{
	size_t i;

	if (!p->set)
		return;
	jsonw_key(w, key);
	jsonw_start_array(w);
	for (i = 0; i < p->n; i++)
		jsonw_string(w, p->v[i]);
	jsonw_end_array(w);
}

static void ports_json(struct jsonw *w, const char *key, const struct eg_ll_ports *p)
{
	size_t i;

	if (!p->set)
		return;
	jsonw_key(w, key);
	jsonw_start_array(w);
	for (i = 0; i < p->n; i++)
		jsonw_uint(w, p->v[i]);
	jsonw_end_array(w);
}

/* One layer: {"from", "scopes", "filesystem": {...}, "network": {...}}, without what abi cannot hold. */
static void layer_json(struct jsonw *w, const char *from, bool scopes, const struct eg_policy_boundary *b,
		       int abi)
{
	jsonw_start_object(w);
	jsonw_string_field(w, "from", from);
	jsonw_bool_field(w, "scopes", scopes);
	if (b && b->filesystem) {
		jsonw_key(w, "filesystem");
		jsonw_start_object(w);
		paths_json(w, "read", &b->layer.read);
		paths_json(w, "write", &b->layer.write);
		paths_json(w, "execute", &b->layer.execute);
		jsonw_end_object(w);
	}
	if (b && b->network && abi >= EG_LL_ABI_NET) {
		jsonw_key(w, "network");
		jsonw_start_object(w);
		ports_json(w, "connect_tcp", &b->layer.connect_tcp);
		ports_json(w, "bind_tcp", &b->layer.bind_tcp);
		jsonw_end_object(w);
	}
	jsonw_end_object(w);
}

/* What a policy asks that abi cannot hold; -EPERM with why when the policy does not allow that. */
static int check(const char *who, const struct eg_policy *p, int abi, unsigned int *missing, char *err,
		 size_t errlen)
{
	const struct eg_policy_boundary *b = policy_boundary(p);
	struct eg_ll_layer asked = b->layer;
	unsigned int m;
	char what[256];

	asked.scopes = false;
	if (!b->filesystem && !b->network)
		return 0;
	m = eg_ll_missing(&asked, abi);
	*missing |= m;
	if (!m || b->on_unsupported_allow)
		return 0;
	eg_ll_missing_text(m, what, sizeof(what));
	if (abi)
		snprintf(err, errlen, "the %s policy asks for %s, and this kernel has Landlock ABI %d: refused "
			 "(on_unsupported: allow in that policy runs without it)", who, what, abi);
	else
		snprintf(err, errlen, "the %s policy asks for file or network rules, and this kernel has no "
			 "Landlock: refused (on_unsupported: allow in that policy runs without them)", who);
	return -EPERM;
}

int boundary_plan(struct jsonw *w, int abi, const struct eg_policy *daemon_pol,
		  const struct eg_policy *session_pol, const char *workspace, char *err, size_t errlen)
{
	const struct eg_policy_boundary *db = daemon_pol ? policy_boundary(daemon_pol) : NULL;
	const struct eg_policy_boundary *sb = session_pol ? policy_boundary(session_pol) : NULL;
	unsigned int missing = 0;
	char text[256];
	bool fs = false, net = false;
	int rc = 0;

	if (daemon_pol)
		rc = check("daemon's", daemon_pol, abi, &missing, err, errlen);
	if (!rc && session_pol)
		rc = check("session", session_pol, abi, &missing, err, errlen);
	if (rc)
		return rc;
	if (abi < EG_LL_ABI_FS)
		missing |= EG_LL_MISS_LANDLOCK;
	else if (abi < EG_LL_ABI_SCOPES)
		missing |= EG_LL_MISS_SCOPES;
	fs = (db && db->filesystem) || (sb && sb->filesystem);
	net = ((db && db->network) || (sb && sb->network)) && abi >= EG_LL_ABI_NET;
	jsonw_start_object(w);
	jsonw_int_field(w, "landlock_abi", abi);
	jsonw_key(w, "layers");
	jsonw_start_array(w);
	if (abi >= EG_LL_ABI_FS) {
		/* the boundary and the daemon's rules in one layer: 16 at most, nesting counts them */
		layer_json(w, "daemon", true, db, abi);
		if (sb && (sb->filesystem || (sb->network && abi >= EG_LL_ABI_NET)))
			layer_json(w, "session", false, sb, abi);
	}
	jsonw_end_array(w);
	jsonw_key(w, "in_force");
	jsonw_start_array(w);
	if (abi >= EG_LL_ABI_FS)
		jsonw_string(w, "ptrace");
	if (abi >= EG_LL_ABI_SCOPES) {
		jsonw_string(w, "signal");
		jsonw_string(w, "abstract_unix_socket");
	}
	if (fs && abi >= EG_LL_ABI_FS)
		jsonw_string(w, "filesystem");
	if (net)
		jsonw_string(w, "network");
	jsonw_end_array(w);
	eg_ll_missing_text(missing, text, sizeof(text));
	jsonw_string_field(w, "missing", text[0] ? text : NULL);
	jsonw_string_field(w, "workspace", workspace);
	jsonw_end_object(w);
	return 0;
}

/* ---- the launcher's side ------------------------------------------------------ */

struct built {
	const char **paths[3];
	uint16_t *ports[2];
};

static void built_free(struct built *b)
{
	free(b->paths[0]);
	free(b->paths[1]);
	free(b->paths[2]);
	free(b->ports[0]);
	free(b->ports[1]);
}

static int paths_from(const json_t *o, const char *key, const char *workspace, struct eg_ll_paths *ret,
		      const char ***store)
{
	const json_t *a = json_object_get(o, key), *v;
	const char **p;
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a))
		return -EINVAL;
	p = calloc(json_array_size(a) + 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*store = p;
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		if (!s)
			return -EINVAL;
		if (!strcmp(s, "workspace")) {
			if (!workspace)
				continue;	/* no workspace: it allows nothing */
			s = workspace;
		}
		p[ret->n++] = s;
	}
	ret->set = true;
	ret->v = p;
	return 0;
}

static int ports_from(const json_t *o, const char *key, struct eg_ll_ports *ret, uint16_t **store)
{
	const json_t *a = json_object_get(o, key), *v;
	uint16_t *p;
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a))
		return -EINVAL;
	p = calloc(json_array_size(a) + 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*store = p;
	json_array_foreach(a, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535)
			return -EINVAL;
		p[ret->n++] = (uint16_t)json_integer_value(v);
	}
	ret->set = true;
	ret->v = p;
	return 0;
}

int boundary_enter(const json_t *plan, const char *workspace, char *err, size_t errlen)
{
	const json_t *layers = json_object_get(plan, "layers"), *l;
	int abi = eg_landlock_abi(), want = json_integer_value(json_object_get(plan, "landlock_abi"));
	size_t i;
	int rc;

	if (!json_is_object(plan) || !json_is_array(layers)) {
		snprintf(err, errlen, "the daemon's reply has no boundary for the session");
		return -EPROTO;
	}
	/* the daemon planned for the kernel it sees: one that sees another is not ours to guess about */
	if (abi != want) {
		snprintf(err, errlen, "the daemon planned for Landlock ABI %d, this process sees %d", want, abi);
		return -EPROTO;
	}
	json_array_foreach(layers, i, l) {
		const json_t *fs = json_object_get(l, "filesystem"), *net = json_object_get(l, "network");
		struct eg_ll_layer ly = { .scopes = json_is_true(json_object_get(l, "scopes")) };
		struct built b = {};

		rc = 0;
		if (fs)
			rc = paths_from(fs, "read", workspace, &ly.read, &b.paths[0]) ?:
			     paths_from(fs, "write", workspace, &ly.write, &b.paths[1]) ?:
			     paths_from(fs, "execute", workspace, &ly.execute, &b.paths[2]);
		if (!rc && net)
			rc = ports_from(net, "connect_tcp", &ly.connect_tcp, &b.ports[0]) ?:
			     ports_from(net, "bind_tcp", &ly.bind_tcp, &b.ports[1]);
		if (rc) {
			snprintf(err, errlen, "the daemon's boundary for the session is malformed (layer %zu)", i);
			built_free(&b);
			return rc;
		}
		rc = eg_ll_enter(&ly, abi, true, err, errlen);
		built_free(&b);
		if (rc)
			return rc;
	}
	return 0;
}

/* Whether path is dir or beneath it (both absolute). */
static bool path_beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return true;
	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

char *boundary_exec_lists(const char *text)
{
	const json_t *l, *ex, *v;
	char real[PATH_MAX], *out = NULL;
	json_t *plan, *lists;
	const char *ws;
	size_t i, j;

	plan = json_loads(text, 0, NULL);
	lists = json_array();
	if (!plan || !lists)
		goto out;
	ws = json_string_value(json_object_get(plan, "workspace"));
	json_array_foreach(json_object_get(plan, "layers"), i, l) {
		json_t *one;

		ex = json_object_get(json_object_get(l, "filesystem"), "execute");
		if (!ex)
			continue;
		one = json_array();
		if (!one || json_array_append_new(lists, one))
			goto out;
		json_array_foreach(ex, j, v) {
			const char *e = json_string_value(v);

			/* the workspace is the launcher's real path already */
			if (e && !strcmp(e, "workspace")) {
				if (ws && json_array_append_new(one, json_string(ws)))
					goto out;
				continue;
			}
			/* one that is not there allows nothing, as for Landlock (a later one is not in it) */
			if (!e || e[0] != '/' || !realpath(e, real))
				continue;
			if (json_array_append_new(one, json_string(e)))
				goto out;
			if (strcmp(real, e) && json_array_append_new(one, json_string(real)))
				goto out;
		}
	}
	out = json_dumps(lists, JSON_COMPACT);
out:
	json_decref(plan);
	json_decref(lists);
	return out;
}

bool boundary_lists_let_run(const char *text, const char *path)
{
	const json_t *one, *v;
	json_t *lists;
	size_t i, j;
	bool ok = true;

	lists = text ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_array(lists)) {
		json_decref(lists);
		return false;
	}
	json_array_foreach(lists, i, one) {
		ok = false;
		json_array_foreach(one, j, v) {
			const char *e = json_string_value(v);

			if (e && path_beneath(path, e)) {
				ok = true;
				break;
			}
		}
		if (!ok)
			break;
	}
	json_decref(lists);
	return ok;
}

bool boundary_env_denied(const struct eg_policy *p, const char *kv)
{
	const struct eg_policy_boundary *b = p ? policy_boundary(p) : NULL;
	size_t n = strcspn(kv, "="), i;
	char name[256];

	if (!b || !b->n_env_deny)
		return false;
	if (!n || n >= sizeof(name))
		return true;
	for (i = 0; i < n; i++)
		name[i] = toupper((unsigned char)kv[i]);
	name[n] = '\0';
	for (i = 0; i < b->n_env_deny; i++)
		if (!fnmatch(b->env_deny[i], name, 0))
			return true;
	return false;
}
