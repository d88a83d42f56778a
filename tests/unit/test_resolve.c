// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* What an exec runs, worked out as the kernel does: '#!' parsing and interpreter chains. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "unit.h"
#include "session/resolve.h"

static int shebang(const char *line, const char **name, const char **arg, char *buf)
{
	memset(buf, 0, EG_BINPRM_BUF);
	memcpy(buf, line, strlen(line));
	return parse_shebang(buf, EG_BINPRM_BUF, name, arg);
}

static void test_parse_shebang(void)
{
	char buf[EG_BINPRM_BUF];
	const char *n, *a;

	ASSERT_OK(shebang("#!/bin/rm -rf\n", &n, &a, buf), "rm -rf");
	ASSERT_STREQ(n, "/bin/rm", "name");
	ASSERT_STREQ(a, "-rf", "one argument");
	ASSERT_OK(shebang("#! /usr/bin/env python3 -u  \nprint()\n", &n, &a, buf), "env");
	ASSERT_STREQ(n, "/usr/bin/env", "leading blank skipped");
	ASSERT_STREQ(a, "python3 -u", "the rest is one argument, trailing blanks cut");
	ASSERT_OK(shebang("#!/bin/sh\n", &n, &a, buf), "no argument");
	ASSERT_TRUE(a == NULL, "none");
	ASSERT_ERR(shebang("#!   \n", &n, &a, buf), "no interpreter");
	ASSERT_ERR(shebang("#x/bin/sh\n", &n, &a, buf), "not #!");
	/* a line longer than the buffer with no blank: the name was cut, the kernel refuses */
	memset(buf, 'a', EG_BINPRM_BUF);
	buf[0] = '#';
	buf[1] = '!';
	buf[2] = '/';
	ASSERT_ERR(parse_shebang(buf, EG_BINPRM_BUF, &n, &a), "cut interpreter path");
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static void test_plan_script_chain(void)
{
	char dir[] = "/tmp/egresolve.XXXXXX", s1[64], s2[64], link[64];
	struct eg_exec_spec spec = { .cwd_fd = AT_FDCWD, .root_fd = -1, .dir_fd = -1, .dir_fd_num = -1 };
	struct eg_exec_plan plan;
	const char *argv[] = { "whatever", "victim", NULL };
	const struct eg_program *f;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir"))
		return;
	snprintf(s1, sizeof(s1), "%s/inner", dir);
	snprintf(s2, sizeof(s2), "%s/cat", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	write_file(s1, "#!/bin/rm -rf\n", 0755);
	{
		char line[128];

		snprintf(line, sizeof(line), "#!%s x\n", s1);
		write_file(s2, line, 0755);
	}
	symlink(s2, link);
	spec.path = link;
	spec.argv = argv;
	spec.argc = 2;
	ASSERT_OK(exec_plan(&spec, &plan), "plan");
	ASSERT_EQ(plan.n, 3, "script, script, binary");
	ASSERT_STREQ(plan.prog[0].path, s2, "the named script, symlink resolved");
	ASSERT_STREQ(plan.prog[0].requested, link, "as spelled");
	ASSERT_EQ(plan.prog[0].kind, EG_PROG_SCRIPT, "a script");
	ASSERT_STREQ(plan.prog[1].path, s1, "the inner script");
	f = exec_plan_final(&plan);
	ASSERT_STREQ(f->path, "/usr/bin/rm", "rm runs");
	ASSERT_EQ(f->kind, EG_PROG_ELF, "an ELF");
	/* the kernel's argv: [/bin/rm, -rf, inner, x, link, victim] */
	ASSERT_EQ(f->argc, 6, "final argc");
	if (f->argc == 6) {
		ASSERT_STREQ(f->argv[0], "/bin/rm", "argv[0] is the #! text");
		ASSERT_STREQ(f->argv[1], "-rf", "the #! argument");
		ASSERT_STREQ(f->argv[2], s1, "the inner script's name");
		ASSERT_STREQ(f->argv[3], "x", "the outer #! argument");
		ASSERT_STREQ(f->argv[4], link, "the script as the caller named it");
		ASSERT_STREQ(f->argv[5], "victim", "the caller's arguments");
	}
	ASSERT_STREQ(plan.prog[0].argv[0], "whatever", "the script is judged with the caller's argv");
	exec_plan_free(&plan);

	/* missing files, directories */
	spec.path = "/nonexistent/x";
	ASSERT_EQ(exec_plan(&spec, &plan), -ENOENT, "ENOENT");
	exec_plan_free(&plan);
	spec.path = dir;
	ASSERT_EQ(exec_plan(&spec, &plan), -EACCES, "a directory: EACCES");
	exec_plan_free(&plan);
	unlink(link);
	unlink(s1);
	unlink(s2);
	rmdir(dir);
}

static void test_plan_loop(void)
{
	char dir[] = "/tmp/egresolve.XXXXXX", s[64];
	struct eg_exec_spec spec = { .cwd_fd = AT_FDCWD, .root_fd = -1, .dir_fd = -1, .dir_fd_num = -1 };
	struct eg_exec_plan plan;
	const char *argv[] = { "x", NULL };

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir"))
		return;
	snprintf(s, sizeof(s), "%s/self", dir);
	{
		char line[128];

		snprintf(line, sizeof(line), "#!%s\n", s);
		write_file(s, line, 0755);
	}
	spec.path = s;
	spec.argv = argv;
	spec.argc = 1;
	ASSERT_EQ(exec_plan(&spec, &plan), -ELOOP, "a script that names itself: ELOOP");
	exec_plan_free(&plan);
	unlink(s);
	rmdir(dir);
}

/*
 * What is not a regular file fails as the kernel fails it (EACCES), and is
 * never opened for reading: a FIFO's open would wait for a writer (each
 * case would hang this test). A symlink named with AT_SYMLINK_NOFOLLOW: ELOOP.
 */
static void test_plan_not_regular(void)
{
	char dir[] = "/tmp/egresolve.XXXXXX", fifo[64], script[64], link[64], line[128];
	struct eg_exec_spec spec = { .cwd_fd = AT_FDCWD, .root_fd = -1, .dir_fd = -1, .dir_fd_num = -1 };
	struct eg_exec_plan plan;
	const char *argv[] = { "x", NULL };
	int fd;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir"))
		return;
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(script, sizeof(script), "%s/script", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	ASSERT_OK(mkfifo(fifo, 0755), "mkfifo");
	snprintf(line, sizeof(line), "#!%s\n", fifo);
	write_file(script, line, 0755);
	ASSERT_OK(symlink("/bin/true", link), "symlink");
	spec.argv = argv;
	spec.argc = 1;

	spec.path = fifo;
	ASSERT_EQ(exec_plan(&spec, &plan), -EACCES, "a FIFO: EACCES");
	exec_plan_free(&plan);
	spec.path = script;
	ASSERT_EQ(exec_plan(&spec, &plan), -EACCES, "a FIFO as the interpreter: EACCES");
	ASSERT_EQ(plan.n, 2, "the script, then its interpreter");
	exec_plan_free(&plan);
	spec.path = dir;
	ASSERT_EQ(exec_plan(&spec, &plan), -EACCES, "a directory: EACCES");
	exec_plan_free(&plan);
	spec.path = "/dev/null";
	ASSERT_EQ(exec_plan(&spec, &plan), -EACCES, "a device: EACCES");
	exec_plan_free(&plan);

	/* execveat(fd, "", AT_EMPTY_PATH) of a FIFO opened O_PATH */
	fd = open(fifo, O_PATH | O_CLOEXEC);
	spec.execveat = true;
	spec.dir_fd = fd;
	spec.dir_fd_num = fd;
	spec.at_flags = AT_EMPTY_PATH;
	spec.path = "";
	ASSERT_EQ(exec_plan(&spec, &plan), -EACCES, "execveat of a FIFO's fd: EACCES");
	exec_plan_free(&plan);
	close(fd);
	spec.dir_fd = -1;
	spec.at_flags = AT_SYMLINK_NOFOLLOW;
	spec.path = link;
	ASSERT_EQ(exec_plan(&spec, &plan), -ELOOP, "AT_SYMLINK_NOFOLLOW on a symlink: ELOOP");
	exec_plan_free(&plan);
	spec.at_flags = 0;
	ASSERT_OK(exec_plan(&spec, &plan), "the same symlink followed");
	exec_plan_free(&plan);

	unlink(link);
	unlink(script);
	unlink(fifo);
	rmdir(dir);
}

/* A file's head is remembered by identity, and read again once the file changed. */
static void test_plan_head_changes(void)
{
	char dir[] = "/tmp/egresolve.XXXXXX", s1[64];
	struct eg_exec_spec spec = { .cwd_fd = AT_FDCWD, .root_fd = -1, .dir_fd = -1, .dir_fd_num = -1 };
	struct timespec t[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
	struct eg_exec_plan plan;
	const char *argv[] = { "x", NULL };

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir"))
		return;
	snprintf(s1, sizeof(s1), "%s/s", dir);
	spec.path = s1;
	spec.argv = argv;
	spec.argc = 1;
	write_file(s1, "#!/bin/sh\n", 0755);
	ASSERT_OK(exec_plan(&spec, &plan), "a script");
	ASSERT_STREQ(plan.prog[1].requested, "/bin/sh", "its interpreter");
	exec_plan_free(&plan);
	ASSERT_OK(exec_plan(&spec, &plan), "again");
	ASSERT_STREQ(plan.prog[1].requested, "/bin/sh", "the same");
	exec_plan_free(&plan);
	/* same size, another interpreter, the times set back: ctime still moves */
	write_file(s1, "#!/bin/xx\n", 0755);
	utimensat(AT_FDCWD, s1, t, 0);
	ASSERT_EQ(exec_plan(&spec, &plan), -ENOENT, "rewritten: read again");
	ASSERT_STREQ(plan.prog[1].requested, "/bin/xx", "the new interpreter");
	exec_plan_free(&plan);
	unlink(s1);
	rmdir(dir);
}

/*
 * However a path is spelled, the name reported is the file's from our
 * root, as the kernel gives it: a symlink, a "." or ".." or a doubled
 * slash on the way, in a directory or at the end, changes nothing.
 */
static void test_plan_names_the_file(void)
{
	char dir[] = "/tmp/egresolve.XXXXXX", real[64], sub[64], want[PATH_MAX], path[PATH_MAX];
	struct eg_exec_spec spec = { .cwd_fd = AT_FDCWD, .root_fd = -1, .dir_fd = -1, .dir_fd_num = -1 };
	const char *argv[] = { "x", NULL };
	struct eg_exec_plan plan;
	const char *spellings[] = { "%s/real/prog", "%s/link/prog", "%s/real/../real/prog", "%s/real/./prog",
				    "%s//real/prog", "%s/real/plink", "%s/link/plink" };
	unsigned int i;
	int root;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir"))
		return;
	snprintf(real, sizeof(real), "%s/real", dir);
	mkdir(real, 0755);
	snprintf(sub, sizeof(sub), "%s/real/prog", dir);
	write_file(sub, "\177ELF", 0755);
	snprintf(sub, sizeof(sub), "%s/link", dir);
	symlink("real", sub);
	snprintf(sub, sizeof(sub), "%s/real/plink", dir);
	symlink("prog", sub);
	/* the name the kernel gives it (a symlinked /tmp resolves too) */
	snprintf(path, sizeof(path), "%s/real/prog", dir);
	if (!ASSERT_TRUE(realpath(path, want) != NULL, "realpath"))
		goto out;
	spec.argv = argv;
	spec.argc = 1;
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int own = 0; own < 2; own++) {
		/* without a root fd, and with ours (as the supervisor passes it) */
		spec.root_fd = own ? root : -1;
		for (i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
			snprintf(path, sizeof(path), spellings[i], dir);
			spec.path = path;
			ASSERT_OK(exec_plan(&spec, &plan), path);
			ASSERT_STREQ(plan.prog[0].path, want, path);
			exec_plan_free(&plan);
		}
	}
	close(root);
out:
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/link", dir);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/real/prog", dir);
	unlink(sub);
	rmdir(real);
	rmdir(dir);
}

struct lazy {
	unsigned int calls;
	int rc;
};

static int lazy_argv(void *arg, const char *const **ret_argv, unsigned int *ret_argc)
{
	static const char *const argv[] = { "lazy", "one", NULL };
	struct lazy *l = arg;

	l->calls++;
	*ret_argv = argv;
	*ret_argc = 2;
	return l->rc;
}

/* argv is asked for only once the first program is found: a PATH search's misses never read it */
static void test_plan_reads_argv_when_found(void)
{
	struct eg_exec_spec spec = { .cwd_fd = AT_FDCWD, .root_fd = -1, .dir_fd = -1, .dir_fd_num = -1,
				     .load_argv = lazy_argv };
	struct eg_exec_plan plan;
	struct lazy l = {};

	spec.load_argv_arg = &l;
	spec.path = "/nonexistent/x";
	ASSERT_EQ(exec_plan(&spec, &plan), -ENOENT, "ENOENT");
	ASSERT_EQ(l.calls, 0, "a program not there: argv not read");
	exec_plan_free(&plan);
	spec.path = "/tmp";
	ASSERT_EQ(exec_plan(&spec, &plan), -EACCES, "a directory: EACCES");
	ASSERT_EQ(l.calls, 0, "no program: argv not read");
	exec_plan_free(&plan);
	spec.path = "/bin/true";
	ASSERT_OK(exec_plan(&spec, &plan), "found");
	ASSERT_EQ(l.calls, 1, "found: argv read once");
	ASSERT_EQ(plan.prog[0].argc, 2, "its argv");
	if (plan.prog[0].argc == 2)
		ASSERT_STREQ(plan.prog[0].argv[1], "one", "the loaded argv");
	exec_plan_free(&plan);
	l.rc = -EFAULT;
	ASSERT_EQ(exec_plan(&spec, &plan), -EFAULT, "an argv that cannot be read fails the plan");
	ASSERT_EQ(l.calls, 2, "asked again for a new plan");
	exec_plan_free(&plan);
}

int main(void)
{
	RUN(test_parse_shebang);
	RUN(test_plan_script_chain);
	RUN(test_plan_loop);
	RUN(test_plan_not_regular);
	RUN(test_plan_head_changes);
	RUN(test_plan_names_the_file);
	RUN(test_plan_reads_argv_when_found);
	return UNIT_DONE();
}
