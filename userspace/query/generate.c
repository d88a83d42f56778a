// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "query/generate.h"
#include "util/termsafe.h"

#define SHAPES_MAX	12	/* more argument shapes than this: any arguments (said in a comment) */
#define PATTERN_MAX	1500	/* a longer pattern: any arguments */
#define EXAMPLES	3

/* Tools that reach the network or install software: asked for, not allowed. */
static const char *const ask_for[] = {
	"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync", "telnet", "ftp",
	"apt", "apt-get", "aptitude", "dpkg", "pip", "pip3", "pipx", "npm", "npx", "yarn", "pnpm", "gem",
	"conda", "brew", "snap", "flatpak",
};

struct eg_generate {
	json_t *progs;		/* path -> {"depths":{..}, "unknown":bool, "tails":{joined:[args]}, "ask":bool} */
	json_t *refused;	/* path -> {"why":..., "argv":[...]} */
	size_t execs;
};

struct eg_generate *generate_new(void)
{
	struct eg_generate *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->progs = json_object();
	g->refused = json_object();
	return g;
}

void generate_free(struct eg_generate *g)
{
	if (!g)
		return;
	json_decref(g->progs);
	json_decref(g->refused);
	free(g);
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static bool asked_for(const char *path)
{
	size_t i;

	for (i = 0; i < sizeof(ask_for) / sizeof(ask_for[0]); i++)
		if (!strcmp(base(path), ask_for[i]))
			return true;
	return false;
}

/* One program run with these arguments (argv[1..]) at this depth. */
static void note(struct eg_generate *g, const char *path, const json_t *argv, json_int_t depth, bool known)
{
	json_t *p = json_object_get(g->progs, path), *tail = json_array(), *a;
	struct sbuf key = {};
	size_t i;

	if (!p) {
		p = json_pack("{s:o,s:b,s:o,s:b}", "depths", json_object(), "unknown", 0, "tails", json_object(),
			      "ask", asked_for(path));
		json_object_set_new(g->progs, path, p);
	}
	if (!known)
		json_object_set_new(p, "unknown", json_true());
	else {
		char d[24];

		snprintf(d, sizeof(d), "%lld", (long long)depth);
		json_object_set_new(json_object_get(p, "depths"), d, json_true());
	}
	json_array_foreach(argv, i, a) {
		if (!i)
			continue;
		json_array_append(tail, a);
		sbuf_puts(&key, json_string_value(a) ?: "");
		sbuf_putc(&key, '\x01');
	}
	json_object_set_new(json_object_get(p, "tails"), key.data ? sbuf_cstr(&key) : "", tail);
	sbuf_free(&key);
}

void generate_add(struct eg_generate *g, const json_t *r)
{
	const char *type = json_string_value(json_object_get(r, "type"));
	const char *file = json_string_value(json_object_get(r, "filename"));
	const char *interp = json_string_value(json_object_get(r, "interpreter"));
	const char *act = json_string_value(json_object_get(r, "action"));
	const char *dec = json_string_value(json_object_get(r, "decision"));
	const json_t *argv = json_object_get(r, "argv");
	json_int_t depth = json_integer_value(json_object_get(r, "depth"));
	bool known = json_is_true(json_object_get(r, "depth_known"));
	const json_t *sd = json_object_get(r, "session_depth");

	/* in a session, the depth a session's policy judges: from the session's command */
	if (json_is_integer(sd)) {
		depth = json_integer_value(sd);
		known = true;
	}

	if (!type || !file || !*file)
		return;
	/* what was refused or killed: to review, not to allow */
	if ((act && (!strcmp(act, "killed") || !strcmp(act, "blocked"))) || (dec && !strcmp(dec, "deny"))) {
		if (!json_object_get(g->refused, file))
			json_object_set_new(g->refused, file, json_pack("{s:s,s:s?,s:O}", "why",
					    act ? act : "denied", "rule",
					    json_string_value(json_object_get(r, "rule")), "argv", argv));
		return;
	}
	if (strcmp(type, "exec"))
		return;
	g->execs++;
	note(g, file, argv, depth, known);
	/* a script runs its interpreter too, judged with the argv it gets */
	if (interp && strcmp(interp, file))
		note(g, interp, argv, depth, known);
}

/* Single-quoted YAML: only '' to escape; no control characters */
static bool yaml_str(struct sbuf *b, const char *s)
{
	const char *p;

	for (p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	sbuf_putc(b, '\'');
	for (p = s; *p; p++)
		if (*p == '\'')
			sbuf_puts(b, "''");
		else
			sbuf_putc(b, *p);
	sbuf_putc(b, '\'');
	return true;
}

static void literal(struct sbuf *b, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		/* PCRE2: a backslash before any non-alphanumeric ASCII character makes it literal */
		if (c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'))
			sbuf_putc(b, '\\');
		sbuf_putc(b, c);
	}
}

static bool all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

/* ".c" of "a.c": 1 to 8 letters or digits after the last dot of the last component */
static const char *extension(const char *s, size_t n)
{
	const char *dot = NULL, *p;

	for (p = s; p < s + n; p++)
		if (*p == '.')
			dot = p;
		else if (*p == '/')
			dot = NULL;
	if (!dot || dot == s || dot[-1] == '/' || s + n - dot - 1 < 1 || s + n - dot - 1 > 8)
		return NULL;
	for (p = dot + 1; p < s + n; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
			return NULL;
	return dot;
}

/* A value that names a file or is a number: its shape, not its spelling */
static bool general_value(struct sbuf *b, const char *v, size_t n)
{
	const char *ext;

	if (all_digits(v, n)) {
		sbuf_puts(b, "[0-9]+");
		return true;
	}
	if (n && v[0] == '-')
		return false;	/* an option */
	ext = extension(v, n);
	if (ext) {
		sbuf_puts(b, "[^ ]*");
		literal(b, ext, v + n - ext);
		return true;
	}
	if (memchr(v, '/', n)) {
		sbuf_puts(b, "[^ ]+");
		return true;
	}
	return false;
}

void generate_token(struct sbuf *b, const char *tok, bool generalize)
{
	size_t n = strlen(tok);
	const char *eq = strrchr(tok, '=');

	if (generalize) {
		size_t start = b->len;

		if (general_value(b, tok, n))
			return;
		b->len = start;
		/* --opt=VALUE, -fresolution=/tmp/cc1234.res: the option as it is, the value's shape */
		if (eq && eq > tok) {
			literal(b, tok, eq + 1 - tok);
			if (general_value(b, eq + 1, n - (eq + 1 - tok)))
				return;
			b->len = start;
		}
	}
	literal(b, tok, n);
}

/* ^TOKENS$ for one argument list */
static void pattern(struct sbuf *b, const json_t *tail, bool generalize)
{
	const json_t *a;
	size_t i;

	sbuf_putc(b, '^');
	json_array_foreach(tail, i, a) {
		if (i)
			sbuf_puts(b, "\\ ");
		generate_token(b, json_string_value(a) ?: "", generalize);
	}
	sbuf_putc(b, '$');
}

static void example(struct sbuf *b, const char *path, const json_t *tail)
{
	const json_t *a;
	size_t i, start = b->len;

	/* a comment line: no '\n' that would end it, no byte a terminal acts on (DEL and C1 too) */
	eg_put_safe(b, base(path));
	json_array_foreach(tail, i, a) {
		sbuf_putc(b, ' ');
		eg_put_safe(b, json_string_value(a) ?: "");
		if (b->len - start > 160) {
			sbuf_puts(b, " ...");
			break;
		}
	}
}

/* A rule name from the program's name: letters, digits, '-', unique in the file */
static void rule_name(char *buf, size_t len, const char *path, json_t *used)
{
	char stem[64];
	size_t i, j = 0;
	int k;

	for (i = 0; base(path)[i] && j < sizeof(stem) - 1; i++) {
		char c = base(path)[i];

		stem[j++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '-';
	}
	stem[j] = '\0';
	snprintf(buf, len, "run-%s", j ? stem : "program");
	for (k = 2; json_object_get(used, buf); k++)
		snprintf(buf, len, "run-%s-%d", j ? stem : "program", k);
	json_object_set_new(used, buf, json_true());
}

static int cmp_depth(const void *a, const void *b)
{
	return *(const long long *)a < *(const long long *)b ? -1 : *(const long long *)a > *(const long long *)b;
}

static void write_rule(struct sbuf *out, const char *path, const json_t *p, json_t *used)
{
	const json_t *tails = json_object_get(p, "tails"), *t;
	json_t *shapes = json_object();
	const char *k;
	long long depths[256];
	size_t nd = 0, nt = json_object_size(tails), i;
	bool any = false, empty = false;
	struct sbuf pat = {};
	char name[96];

	/*
	 * paths: entries are globs: a program whose own name holds a glob's
	 * characters (/tmp/ and a star, run once) would be a rule for every program
	 * the glob matches. It gets no rule (the policy denies by default);
	 * the comment says so.
	 */
	if (strpbrk(path, "*?[\\")) {
		sbuf_puts(out, "\n  # ran, but its path has a glob's characters (* ? [ \\) and a paths: entry would "
			  "be a glob: no rule written for it\n  #   ");
		eg_put_safe(out, path);
		sbuf_putc(out, '\n');
		json_decref(shapes);
		return;
	}
	rule_name(name, sizeof(name), path, used);
	json_object_foreach((json_t *)json_object_get(p, "depths"), k, t)
		if (nd < 256)
			depths[nd++] = strtoll(k, NULL, 10);
	qsort(depths, nd, sizeof(depths[0]), cmp_depth);
	/* group the argument lists by their shape */
	json_object_foreach((json_t *)tails, k, t) {
		if (!json_array_size(t))
			empty = true;
		sbuf_reset(&pat);
		pattern(&pat, t, true);
		if (pat.oom || pat.len > PATTERN_MAX)
			any = true;
		else {
			json_t *g = json_object_get(shapes, sbuf_cstr(&pat));

			if (!g)
				json_object_set_new(shapes, sbuf_cstr(&pat), g = json_array());
			json_array_append((json_t *)g, (json_t *)t);
		}
	}
	if (json_object_size(shapes) > SHAPES_MAX || empty)
		any = true;

	sbuf_printf(out, "\n  - name: %s\n", name);
	if (any) {
		sbuf_printf(out, "    # %zu argument list%s seen%s: any arguments allowed. E.g.:\n", nt, nt == 1 ? "" : "s",
			    empty ? ", one of them empty (no pattern can say 'no arguments')" : "");
		i = 0;
		json_object_foreach((json_t *)tails, k, t) {
			if (i++ == EXAMPLES)
				break;
			sbuf_puts(out, "    #   ");
			example(out, path, t);
			sbuf_putc(out, '\n');
		}
	}
	sbuf_puts(out, "    paths: [");
	yaml_str(out, path);
	sbuf_puts(out, "]\n");
	if (!json_is_true(json_object_get(p, "unknown")) && nd)
		sbuf_printf(out, "    context: {min_depth: %lld, max_depth: %lld}\n", depths[0] < 0 ? 0 : depths[0],
			    depths[nd - 1] < 0 ? 0 : depths[nd - 1]);
	else
		sbuf_puts(out, "    # ran where its depth was not known (started before the daemon): any depth\n");
	if (!any) {
		sbuf_puts(out, "    args_patterns:\n");
		json_object_foreach(shapes, k, t) {
			size_t n = json_array_size(t), e;

			/*
			 * Even one run's file names are its shape: a compiler's
			 * temporary files (/tmp/ccXXXXXX.s) are new at each run.
			 */
			sbuf_reset(&pat);
			pattern(&pat, json_array_get(t, 0), false);
			if (n == 1 && !strcmp(sbuf_cstr(&pat), k)) {
				sbuf_puts(out, "      - ");
				yaml_str(out, k);
				sbuf_putc(out, '\n');
				continue;
			}
			if (n == 1)
				sbuf_puts(out, "      # one run, its file names and numbers generalized:\n");
			else
				sbuf_printf(out, "      # %zu runs that differ in file names or numbers, e.g.:\n", n);
			for (e = 0; e < n && e < EXAMPLES; e++) {
				sbuf_puts(out, "      #   ");
				example(out, path, json_array_get(t, e));
				sbuf_putc(out, '\n');
			}
			sbuf_puts(out, "      - ");
			yaml_str(out, k);
			sbuf_putc(out, '\n');
		}
	}
	if (json_is_true(json_object_get(p, "ask")))
		sbuf_puts(out, "    decision: approval\n"
			       "    message: reaches the network or installs software: a person decides\n");
	else
		sbuf_puts(out, "    decision: allow\n");
	sbuf_free(&pat);
	json_decref(shapes);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int generate_write(struct eg_generate *g, const char *source, struct sbuf *out)
{
	json_t *used, *p;
	const char **paths;
	const char *k;
	size_t n = 0, i;
	bool ask = false;
	char when[64];
	time_t now = time(NULL);
	struct tm tm;

	if (!g->execs)
		return -ENOENT;
	used = json_object();
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	paths = calloc(json_object_size(g->progs), sizeof(*paths));
	if (!paths || !used) {
		free(paths);
		json_decref(used);
		return -ENOMEM;
	}
	json_object_foreach(g->progs, k, p) {
		paths[n++] = k;
		ask |= json_is_true(json_object_get(p, "ask"));
	}
	if (n > 1)
		qsort(paths, n, sizeof(*paths), cmp_str);
	sbuf_printf(out, "# Generated by 'execgate policy generate' on %s from %zu execs (%s).\n"
			 "# Default deny: the programs below, at the depths and with the arguments seen,\n"
			 "# and nothing else. Read it before you use it: 'execgate policy check --strict'.\n",
		    when, g->execs, source);
	sbuf_puts(out, "default_decision: deny\n");
	if (ask)
		sbuf_puts(out, "sandbox:\n  seccomp:\n    execve:\n      approval_timeout: 60s\n"
			       "      approval_timeout_action: deny\n");
	sbuf_puts(out, "\ncommands:");
	for (i = 0; i < n; i++)
		write_rule(out, paths[i], json_object_get(g->progs, paths[i]), used);
	if (json_object_size(g->refused)) {
		sbuf_puts(out, "\n\n# Refused or killed while the records were made: not allowed above. Uncomment\n"
			       "# a rule only if the program should have run.\n");
		json_object_foreach(g->refused, k, p) {
			char name[96];

			rule_name(name, sizeof(name), k, used);
			sbuf_printf(out, "#\n#  - name: %s\n#    # %s", name, json_string_value(json_object_get(p, "why")));
			if (json_string_value(json_object_get(p, "rule"))) {
				sbuf_puts(out, " by rule ");
				eg_put_safe(out, json_string_value(json_object_get(p, "rule")));
			}
			sbuf_puts(out, ": ");
			{
				json_t *tail = json_deep_copy(json_object_get(p, "argv"));

				if (json_array_size(tail))
					json_array_remove(tail, 0);
				example(out, k, tail);
				json_decref(tail);
			}
			sbuf_puts(out, "\n#    paths: [");
			yaml_str(out, k);
			sbuf_puts(out, "]\n#    decision: allow\n");
		}
	}
	sbuf_putc(out, '\n');
	free(paths);
	json_decref(used);
	return out->oom ? -ENOMEM : 0;
}
