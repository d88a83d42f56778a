// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate policy check|test|reload, run as a user would: exit statuses,
 * the FILE:LINE:COL lines, JSON on stdout and nothing else there. Uses the
 * execgate binary built next to the tests (OUTPUT/execgate).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "unit.h"

static char execgate[PATH_MAX];
static char tmpdir[] = "/tmp/execgate-cli-test-XXXXXX";
static char out[65536], err[65536];

static bool find_execgate(void)
{
	static const char *const rel[] = { "/../execgate", "/../../execgate" };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *s;
	size_t i;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	s = strrchr(exe, '/');
	if (!s)
		return false;
	*s = '\0';
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if (snprintf(execgate, sizeof(execgate), "%s%s", exe, rel[i]) >= (int)sizeof(execgate))
			continue;
		if (!access(execgate, X_OK))
			return true;
	}
	return false;
}

static void slurp(int fd, char *buf, size_t len)
{
	ssize_t n, off = 0;

	lseek(fd, 0, SEEK_SET);
	while ((size_t)off < len - 1 && (n = read(fd, buf + off, len - 1 - off)) > 0)
		off += n;
	buf[off] = '\0';
	close(fd);
}

/* Runs execgate with args (NULL-terminated); returns its exit status, fills out and err. */
static int run(const char *const *args)
{
	char po[PATH_MAX], pe[PATH_MAX];
	const char *argv[32];
	int fo, fe, status, i;
	pid_t pid;

	snprintf(po, sizeof(po), "%s/out", tmpdir);
	snprintf(pe, sizeof(pe), "%s/err", tmpdir);
	fo = open(po, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fe = open(pe, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fo < 0 || fe < 0)
		return -1;
	argv[0] = execgate;
	for (i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fo, 1);
		dup2(fe, 2);
		execv(execgate, (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	slurp(fo, out, sizeof(out));
	slurp(fe, err, sizeof(err));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define RUN_EG(...) run((const char *const[]){ __VA_ARGS__, NULL })

static const char *write_file(const char *name, const char *text)
{
	static char path[8][PATH_MAX];
	static int slot;
	char *p = path[slot++ % 8];
	FILE *f;

	snprintf(p, PATH_MAX, "%s/%s", tmpdir, name);
	f = fopen(p, "w");
	if (!f)
		return p;
	fputs(text, f);
	fclose(f);
	return p;
}

static const char seedish[] =
	"sandbox:\n"
	"  seccomp:\n"
	"    execve:\n"
	"      approval_timeout: 10s\n"
	"commands:\n"
	"  - name: allow-git-direct\n"
	"    basenames: [git]\n"
	"    decision: allow\n"
	"    context: [direct]\n"
	"  - name: block-dangerous-rm\n"
	"    basenames: [rm]\n"
	"    args_patterns: [\"-rf\", \"-fr\", \"/ \", \"/*\"]\n"
	"    decision: deny\n"
	"  - name: approve-nested-network\n"
	"    basenames: [curl, wget]\n"
	"    decision: approval\n"
	"    context: [nested]\n"
	"  - name: log-ssh\n"
	"    basenames: [ssh]\n"
	"    decision: audit\n"
	"    message: remote shell\n";

static void test_cli_check_valid_with_warning(void)
{
	const char *f = write_file("seedish.yaml", seedish);
	char want[PATH_MAX + 128];

	ASSERT_EQ(RUN_EG("policy", "check", f), 0, "exit status");
	ASSERT_TRUE(strstr(out, "valid, 4 rules, default_decision allow, 1 warning") != NULL, "summary");
	ASSERT_TRUE(strstr(out, "kernel, sessions") != NULL, "enforced in the kernel and sessions");
	ASSERT_TRUE(strstr(out, "sessions only") != NULL, "a rule the kernel cannot hold");
	ASSERT_TRUE(strstr(out, "not in the kernel: args_patterns") != NULL, "and why");
	ASSERT_TRUE(strstr(out, "audit only") != NULL, "audit rule");
	snprintf(want, sizeof(want), "%s:12:41: warning: pattern '/*' in rule 'block-dangerous-rm' matches "
		 "the empty string, so it matches every command line", f);
	ASSERT_TRUE(!strncmp(err, want, strlen(want)), "warning line");
	if (strncmp(err, want, strlen(want)))
		printf("    stderr: %s", err);

	ASSERT_EQ(RUN_EG("policy", "check", "--strict", f), 1, "--strict fails on a warning");
	ASSERT_TRUE(strstr(err, "failing because of --strict") != NULL, "says why");
}

static void test_cli_check_errors(void)
{
	const char *f = write_file("bad.yaml", "commands:\n"
					       "  - name: a\n"
					       "    basenames: [ls]\n"
					       "    decision: allow\n"
					       "  - name: b\n"
					       "    decision: deny\n"
					       "    basename: [rm]\n"
					       "  - name: a\n"
					       "    decision: nope\n");
	char want[PATH_MAX + 256];

	ASSERT_EQ(RUN_EG("policy", "check", f), 1, "exit status");
	snprintf(want, sizeof(want),
		 "%s:7:5: error: unknown key 'basename' in a rule; did you mean 'basenames'?\n"
		 "%s:8:11: error: duplicate rule name 'a' (first at line 2)\n"
		 "%s:9:15: error: 'decision' must be allow, deny, approval, audit or redirect, got 'nope'\n", f, f, f);
	ASSERT_TRUE(!strncmp(err, want, strlen(want)), "one error a line, in order");
	if (strncmp(err, want, strlen(want)))
		printf("    stderr: %s", err);
	ASSERT_STREQ(out, "", "nothing on stdout");
}

static void test_cli_check_json(void)
{
	const char *good = write_file("good.yaml", seedish);
	const char *bad = write_file("bad2.yaml", "commands: {}\n");
	size_t n;

	ASSERT_EQ(RUN_EG("policy", "check", "--json", good), 0, "exit status");
	n = strlen(out);
	ASSERT_TRUE(n > 2 && out[0] == '{' && out[n - 2] == '}' && out[n - 1] == '\n', "one object");
	ASSERT_TRUE(strchr(out, '\n') == out + n - 1, "one line");
	ASSERT_TRUE(strstr(out, "\"valid\":true") != NULL, "valid");
	ASSERT_TRUE(strstr(out, "{\"name\":\"allow-git-direct\",\"decision\":\"allow\",\"line\":6,"
				"\"enforced_in\":[\"kernel\",\"sessions\"],\"kernel\":true,"
				"\"reads\":[\"name\",\"depth\"]}") != NULL,
		    "rule entry, with where it is enforced and the facts it reads");
	ASSERT_TRUE(strstr(out, "\"enforced_in\":[\"sessions only\"],\"kernel\":false,"
				"\"not_in_kernel_because\":\"args_patterns") != NULL,
		    "a rule the kernel cannot hold, and why");
	ASSERT_TRUE(strstr(out, "\"enforced_in\":[\"audit only\"]") != NULL, "audit rule");
	ASSERT_TRUE(strstr(out, "\"warnings\":[{\"file\":") != NULL, "warnings");
	ASSERT_STREQ(err, "", "no prose");

	ASSERT_EQ(RUN_EG("policy", "check", "--json", bad), 1, "invalid");
	ASSERT_TRUE(strstr(out, "\"valid\":false") != NULL, "valid false");
	ASSERT_TRUE(strstr(out, "\"line\":1,\"column\":11,\"message\":\"'commands' must be a list of rules") != NULL,
		    "error entry");
	ASSERT_TRUE(strstr(out, "\"rules\":[]") != NULL, "no rules");
	ASSERT_STREQ(err, "", "no prose");

	ASSERT_EQ(RUN_EG("policy", "check", "--strict", "--json", good), 1, "--strict --json");
	ASSERT_TRUE(strstr(out, "\"ok\":false") != NULL, "ok false");
}

/* What a policy asks of a session's boundary, and what a session of it would do on a kernel (issue 18). */
static void test_cli_check_boundary(void)
{
	const char *pol = write_file("boundary.yaml", "filesystem: {write: [workspace]}\n"
				     "network: {connect_tcp: [443]}\ncommands: []\n");
	const char *allow = write_file("boundary-allow.yaml", "filesystem: {write: [workspace]}\n"
				       "network: {connect_tcp: [443]}\non_unsupported: allow\ncommands: []\n");

	/* the variable only lowers what the kernel has */
	if (syscall(444 /* landlock_create_ruleset */, NULL, 0, 1 /* VERSION */) < 2)
		SKIP("this kernel has no Landlock ABI 2");
	setenv("EXECGATE_LANDLOCK_ABI", "2", 1);
	ASSERT_EQ(RUN_EG("policy", "check", pol), 0, "valid on any kernel");
	ASSERT_TRUE(strstr(out, "sessions here: refused: ") && strstr(out, "network rules (Landlock ABI 4)") &&
		    strstr(out, "limits on truncating files (Landlock ABI 3)"), out);
	ASSERT_EQ(RUN_EG("policy", "check", "--json", allow), 0, "valid");
	ASSERT_TRUE(strstr(out, "\"on_unsupported\":\"allow\",\"needs_landlock_abi\":4,\"landlock_abi\":2") != NULL,
		    out);
	ASSERT_TRUE(strstr(out, "\"in_force\":[\"ptrace\",\"filesystem\"]") != NULL, out);
	unsetenv("EXECGATE_LANDLOCK_ABI");
}

/*
 * Rules scoped to a context: policy test judged every exec outside any
 * context, so it disagreed with the daemon, the sessions and the kernel on
 * them. --context NAME puts the task in one.
 */
static void test_cli_test_context(void)
{
	const char *f = write_file("ctx.yaml", "contexts:\n"
				   "  - {name: claude, identities: [{basenames: [claude]}]}\n"
				   "commands:\n"
				   "  - {name: no-curl-in-claude, basenames: [curl], contexts: [claude], decision: deny}\n");

	ASSERT_EQ(RUN_EG("policy", "test", f, "--", "curl", "x"), 0, "outside any context: allowed");
	ASSERT_EQ(RUN_EG("policy", "test", f, "--context", "claude", "--depth", "2", "--", "curl", "x"), 1,
		  "in claude: denied");
	ASSERT_TRUE(!strncmp(out, "decision: deny\nrule: no-curl-in-claude\n", 39), out);
	ASSERT_EQ(RUN_EG("policy", "test", f, "--context", "none", "--", "curl", "x"), 0, "none: outside");
	ASSERT_EQ(RUN_EG("policy", "test", f, "--context", "aider", "--", "curl", "x"), 2, "no such context");
	ASSERT_TRUE(strstr(err, "defines no such context") != NULL, err);
}

static void test_cli_test(void)
{
	const char *f = write_file("t.yaml", seedish);

	ASSERT_EQ(RUN_EG("policy", "test", f, "--", "rm", "-rf", "/tmp/x"), 1, "exit status: deny");
	ASSERT_TRUE(!strncmp(out, "decision: deny\nrule: block-dangerous-rm\n", 40), "rm -rf");
	ASSERT_EQ(RUN_EG("policy", "test", f, "--", "git", "status"), 0, "git");
	ASSERT_TRUE(!strncmp(out, "decision: allow\nrule: allow-git-direct\n", 38), "git direct");
	ASSERT_EQ(RUN_EG("policy", "test", f, "--depth", "1", "--", "git", "status"), 0, "nested git");
	ASSERT_TRUE(!strncmp(out, "decision: allow\nrule: default\n", 30), "nested git: default");
	ASSERT_EQ(RUN_EG("policy", "test", "--json", "--depth", "2", "--uid", "1000", f, "--", "/usr/bin/curl", "-s",
			 "x"), 3, "json: approval");
	ASSERT_TRUE(strstr(out, "\"decision\":\"approval\",\"rule\":\"approve-nested-network\"") != NULL,
		    "curl nested");
	ASSERT_TRUE(strstr(out, "\"filename\":\"/usr/bin/curl\"") != NULL, "filename as given");
	ASSERT_TRUE(strstr(out, "\"uid\":1000") != NULL, "uid");
	ASSERT_EQ(RUN_EG("policy", "test", f, "--", "ssh", "host"), 0, "ssh");
	ASSERT_TRUE(strstr(out, "message: remote shell\n") != NULL, "message");
	ASSERT_EQ(RUN_EG("policy", "test", "--truncated", f, "--", "ls"), 1, "truncated: deny");
	ASSERT_TRUE(!strncmp(out, "decision: deny\nrule: on_truncated\n", 34), "on_truncated");
	/* A name without '/' is looked up in $PATH like a shell would (sh is on every PATH). */
	ASSERT_EQ(RUN_EG("policy", "test", f, "--", "sh", "-c", "true"), 0, "sh");
	ASSERT_TRUE(strstr(out, "filename: /") != NULL, "resolved through PATH");
	ASSERT_EQ(RUN_EG("policy", "test", f, "--", "no-such-program-here"), 0, "unknown program");
	ASSERT_TRUE(strstr(out, "filename: no-such-program-here\n") != NULL, "kept as given");
	ASSERT_EQ(RUN_EG("policy", "test", f, "--depth", "1", "rm", "-rf", "x", "--depth", "0"), 1, "no --");
	ASSERT_TRUE(!strncmp(out, "decision: deny\nrule: block-dangerous-rm\n", 40), "options after ARGV[0] are argv");
	ASSERT_EQ(RUN_EG("policy", "test", "--uid", "root", "--json", f, "--", "git", "status"), 0, "--uid by name");
	ASSERT_TRUE(strstr(out, "\"uid\":0") != NULL, "root is uid 0");
	ASSERT_EQ(RUN_EG("policy", "test", "--uid", "no-such-user-here", f, "--", "ls"), 2, "unknown user: usage");
	ASSERT_EQ(RUN_EG("policy", "test", write_file("bad.yaml", "commands: 3\n"), "--", "ls"), 5, "no load: 5");
	ASSERT_EQ(RUN_EG("policy", "test", f), 2, "no command: usage");
	ASSERT_EQ(RUN_EG("policy", "test", "--depth", "x", f, "--", "ls"), 2, "bad depth: usage");
}

static void test_cli_reload_without_daemon(void)
{
	ASSERT_EQ(RUN_EG("policy", "reload", "--pin-path", "/sys/fs/bpf/execgate-unit-test-none"), 1, "exit status");
	ASSERT_TRUE(!strncmp(err, "execgate policy reload: no daemon is running for pin path "
			     "/sys/fs/bpf/execgate-unit-test-none", 92), "a clear line naming the verb and the pin path");
	ASSERT_TRUE(strchr(err, '\n') == err + strlen(err) - 1, "exactly one line");
	ASSERT_STREQ(out, "", "nothing on stdout");
	ASSERT_EQ(RUN_EG("policy", "reload", "--json", "--pin-path", "/sys/fs/bpf/execgate-unit-test-none"), 1,
		  "json");
	ASSERT_TRUE(!strncmp(out, "{\"error\":\"no daemon is running", 30), "json error");
}

static void test_cli_usage(void)
{
	ASSERT_EQ(RUN_EG("policy", "--help"), 0, "policy --help");
	ASSERT_TRUE(strstr(out, "check") && strstr(out, "test") && strstr(out, "reload"), "lists the verbs");
	ASSERT_EQ(RUN_EG("policy", "check", "--help"), 0, "check --help");
	ASSERT_TRUE(strstr(out, "FILE:LINE:COLUMN") != NULL, "explains");
	ASSERT_EQ(RUN_EG("policy"), 2, "no verb");
	ASSERT_EQ(RUN_EG("policy", "frobnicate"), 2, "unknown verb");
	ASSERT_EQ(RUN_EG("policy", "check"), 2, "no file");
	ASSERT_EQ(RUN_EG("policy", "check", "/nonexistent.yaml"), 1, "missing file");
	ASSERT_TRUE(strstr(err, "/nonexistent.yaml: error: cannot open: No such file or directory") != NULL,
		    "says so");
}

static void test_cli_example_policies(void)
{
	static const char *const files[] = { "policy/host-audit.yaml", "policy/agent-sandbox.yaml",
					     "policy/restricted.yaml" };
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s", files[i]);
		if (access(path, R_OK))
			SKIP("run from the top of the source tree");
		if (!ASSERT_EQ(RUN_EG("policy", "check", "--strict", path), 0, files[i]))
			printf("    %s", err);
	}
	ASSERT_EQ(RUN_EG("policy", "test", "policy/restricted.yaml", "--depth", "1", "--", "/bin/ls"), 1, "test: deny");
	ASSERT_TRUE(strstr(out, "decision: deny\nrule: restricted\nmessage: restricted:") != NULL, "restricted");
	ASSERT_EQ(RUN_EG("policy", "test", "policy/agent-sandbox.yaml", "--", "/bin/rm", "-r", "-f", "x"), 1, "rm: deny");
	ASSERT_TRUE(strstr(out, "decision: deny\nrule: block-dangerous-rm\n") != NULL, "agent rm -r -f");
	ASSERT_EQ(RUN_EG("policy", "test", "policy/host-audit.yaml", "--", "/usr/bin/chmod", "u+s", "x"), 0, "chmod");
	ASSERT_TRUE(strstr(out, "decision: audit\nrule: setuid-bit\n") != NULL, "host-audit chmod u+s");
}

static void remove_tmpdir(void)
{
	struct dirent *de;
	DIR *d = opendir(tmpdir);

	while (d && (de = readdir(d))) {
		char p[PATH_MAX];

		if (de->d_name[0] == '.')
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", tmpdir, de->d_name) < (int)sizeof(p))
			unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(tmpdir);
}

int main(void)
{
	/* the lint's own warnings, not those about this host's busybox */
	setenv("EXECGATE_NO_MULTICALL_LINT", "1", 1);
	int rc;

	if (!find_execgate() || !mkdtemp(tmpdir)) {
		printf("SKIP policy_cli: no execgate binary next to the tests (make build-tests)\n");
		return 0;
	}
	RUN(test_cli_check_valid_with_warning);
	RUN(test_cli_check_errors);
	RUN(test_cli_check_json);
	RUN(test_cli_check_boundary);
	RUN(test_cli_test);
	RUN(test_cli_test_context);
	RUN(test_cli_reload_without_daemon);
	RUN(test_cli_usage);
	RUN(test_cli_example_policies);
	rc = UNIT_DONE();
	remove_tmpdir();
	return rc;
}
