// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A session's redirect directory (policy/README.md, "Redirects"): for each
 * name a redirect rule catches, an entry that says the rule's message on
 * stderr and runs the redirect command with its args, then the original
 * arguments. The launcher puts the directory first in the command's PATH
 * and runs an entry instead of its own command when the command is one.
 * The daemon writes it as root, mode 0755, under /run/execgate/redirect:
 * no process of the session can put anything there. The supervisor lets an
 * exec of an entry run (decision redirect, action redirected) and refuses
 * every other exec a redirect rule catches (action blocked), naming where
 * it would have gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "policy/policy.h"
#include "session/internal.h"
#include "util/fileid.h"
#include "util/log.h"
#include "util/sbuf.h"

#define REDIRECT_ROOT	"/run/execgate/redirect"

/* s as one word of sh: '...' with every ' spelled '\'' */
static void sh_quote(struct sbuf *b, const char *s)
{
	sbuf_putc(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			sbuf_puts(b, "'\\''");
		else
			sbuf_putc(b, *s);
	}
	sbuf_putc(b, '\'');
}

static bool name_ok(const char *name)
{
	return name[0] && name[0] != '.' && !strchr(name, '/') && strlen(name) < 200;
}

static int entry(void *arg, const char *name, const char *rule, const char *message, const struct eg_redirect *rd)
{
	const char *dir = arg;
	struct sbuf b = {}, said = {};
	char path[PATH_MAX];
	size_t i;
	int fd;

	if (!name_ok(name))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	sbuf_puts(&said, "execgate: redirect: ");
	sbuf_puts(&said, message ? message : "this command goes elsewhere");
	sbuf_puts(&said, " (rule ");
	sbuf_puts(&said, rule ? rule : "?");
	sbuf_puts(&said, "): running ");
	sbuf_puts(&said, rd->command);
	for (i = 0; i < rd->n_args; i++) {
		sbuf_putc(&said, ' ');
		sbuf_puts(&said, rd->args[i]);
	}
	sbuf_puts(&said, " instead of ");
	sbuf_puts(&said, name);
	sbuf_puts(&b, "#!/bin/sh\n# execgate: rule ");
	sbuf_puts(&b, rule ? rule : "?");
	sbuf_puts(&b, " redirects this name (policy/README.md)\nprintf '%s\\n' ");
	sh_quote(&b, sbuf_cstr(&said));
	sbuf_puts(&b, " >&2\nexec ");
	sh_quote(&b, rd->command);
	for (i = 0; i < rd->n_args; i++) {
		sbuf_putc(&b, ' ');
		sh_quote(&b, rd->args[i]);
	}
	sbuf_puts(&b, " \"$@\"\n");
	sbuf_free(&said);
	if (b.oom) {
		sbuf_free(&b);
		return -ENOMEM;
	}
	/* the first rule that names it wins, as in the evaluator's order */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0755);
	if (fd >= 0) {
		if (write(fd, b.data, b.len) != (ssize_t)b.len)
			p_warn("session: cannot write %s: %s", path, strerror(errno));
		fchmod(fd, 0755);
		close(fd);
	}
	sbuf_free(&b);
	return 0;
}

void redirect_dir_make(struct eg_sessions *s, struct eg_session *se)
{
	const struct eg_policy *p = *s->o.global;
	char dir[128];

	if (!p || !policy_rule_has_redirects(p))
		return;
	if (mkdir("/run/execgate", 0755) && errno != EEXIST)
		return;
	if (mkdir(REDIRECT_ROOT, 0755) && errno != EEXIST)
		return;
	snprintf(dir, sizeof(dir), REDIRECT_ROOT "/%d-s-%x", (int)getpid(), se->id);
	if (mkdir(dir, 0755)) {
		p_warn("session s-%x: no redirect directory %s: %s (redirects are refused instead)", se->id, dir,
		       strerror(errno));
		return;
	}
	chmod(dir, 0755);
	policy_redirect_names(p, entry, dir);
	se->redirect_dir = strdup(dir);
}

void redirect_dir_remove(struct eg_session *se)
{
	DIR *d;
	struct dirent *e;

	if (!se->redirect_dir)
		return;
	d = opendir(se->redirect_dir);
	if (d) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(se->redirect_dir);
	free(se->redirect_dir);
	se->redirect_dir = NULL;
}

bool redirect_path_in(const struct eg_session *se, const char *path, uint64_t dev, uint64_t ino)
{
	struct stat st;
	size_t n;

	for (; se; se = se->parent) {
		if (!se->redirect_dir || !path)
			continue;
		n = strlen(se->redirect_dir);
		if (strncmp(path, se->redirect_dir, n) || path[n] != '/' || !name_ok(path + n + 1))
			continue;
		/*
		 * The entry itself, as the daemon sees it: not a file mounted
		 * over its name in the task's mount namespace (one a user
		 * namespace's root made), which has the name and not the file.
		 */
		return !lstat(path, &st) && S_ISREG(st.st_mode) && eg_kdev(st.st_dev) == dev && st.st_ino == ino;
	}
	return false;
}
