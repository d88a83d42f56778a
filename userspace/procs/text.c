// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Environment blocklist, send-keys names, log tails (procs/text.h). */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "procs/text.h"

/*
 * Variables that make a program load or run code it was not asked to:
 * glibc's own list of those it drops for setuid programs
 * (sysdeps/generic/unsecvars.h: the dynamic loader's LD_*, iconv's
 * modules, locale and resolver files, malloc tracing, tunables; TMPDIR
 * left out, which names where files go, not what runs), the shells' and
 * the interpreters' (a module, a startup file or an option that loads
 * one), and OpenSSL's configuration, which loads engines.
 */
static const char *const injection[] = {
	/* glibc */
	"GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LD_*", "LOCALDOMAIN", "LOCPATH",
	"MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
	/* shells */
	"BASH_ENV", "ENV", "PROMPT_COMMAND", "BASH_FUNC_*", "SHELLOPTS", "BASHOPTS", "PS4",
	/* interpreters */
	"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONWARNINGS", "PYTHONBREAKPOINT", "PYTHONUSERBASE",
	"PYTHONINSPECT", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS",
	"NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "LUA_INIT", "LUA_INIT_*",
	"LUA_PATH", "LUA_PATH_*", "LUA_CPATH", "LUA_CPATH_*", "TCLLIBPATH", "PHPRC", "PHP_INI_SCAN_DIR",
	"OPENSSL_CONF", "OPENSSL_ENGINES", "GIO_MODULE_DIR", "GTK_MODULES",
};

static const char *const secrets[] = {
	"*_API_KEY", "*_TOKEN", "*PASSWORD*", "*SECRET*", "*PRIVATE_KEY*", "DATABASE_URL",
};

/*
 * what a carried shell state drops besides: the next command's pager, editor
 * and cd's search, and execgate's own settings (the state becomes the next
 * launcher's environment: EXECGATE_LANDLOCK_ABI=0 exported once made every
 * later command's launcher refuse its session, for good)
 */
static const char *const blocked_state[] = {
	"CDPATH", "EDITOR", "VISUAL", "PAGER", "GIT_PAGER", "MANPAGER", "EXECGATE_*",
};

static bool match_any(const char *const *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!fnmatch(v[i], name, 0))
			return true;
	return false;
}

/* NAME of NAME or NAME=VALUE, upper case; false when it is not a name at all. */
static bool env_name(const char *kv, char *name, size_t len)
{
	size_t n = strcspn(kv, "="), i;

	if (!n || n >= len)
		return false;
	/* BASH_FUNC_f%% and friends: whatever the case of the secret's name */
	for (i = 0; i < n; i++)
		name[i] = toupper((unsigned char)kv[i]);
	name[n] = 0;
	return true;
}

#define N(v) (sizeof(v) / sizeof((v)[0]))

bool eg_env_injection(const char *kv)
{
	char name[256];

	return !env_name(kv, name, sizeof(name)) || match_any(injection, N(injection), name);
}

bool eg_env_blocked(const char *kv, bool shell_state)
{
	char name[256];

	if (!env_name(kv, name, sizeof(name)))
		return true;
	if (match_any(injection, N(injection), name) || match_any(secrets, N(secrets), name))
		return true;
	return shell_state && match_any(blocked_state, N(blocked_state), name);
}

void eg_env_list(void (*fn)(void *arg, const char *pattern, bool secret), void *arg)
{
	size_t i;

	for (i = 0; i < N(injection); i++)
		fn(arg, injection[i], false);
	for (i = 0; i < N(secrets); i++)
		fn(arg, secrets[i], true);
}

static const struct { const char *name; const char *seq; } keys[] = {
	{ "Enter", "\r" }, { "Tab", "\t" }, { "BTab", "\033[Z" }, { "Escape", "\033" },
	{ "Esc", "\033" }, { "Space", " " }, { "BSpace", "\177" }, { "Backspace", "\177" },
	{ "Up", "\033[A" }, { "Down", "\033[B" }, { "Right", "\033[C" }, { "Left", "\033[D" },
	{ "Home", "\033[H" }, { "End", "\033[F" }, { "PageUp", "\033[5~" }, { "PPage", "\033[5~" },
	{ "PageDown", "\033[6~" }, { "NPage", "\033[6~" }, { "Delete", "\033[3~" }, { "DC", "\033[3~" },
	{ "Insert", "\033[2~" }, { "IC", "\033[2~" },
	{ "F1", "\033OP" }, { "F2", "\033OQ" }, { "F3", "\033OR" }, { "F4", "\033OS" },
	{ "F5", "\033[15~" }, { "F6", "\033[17~" }, { "F7", "\033[18~" }, { "F8", "\033[19~" },
	{ "F9", "\033[20~" }, { "F10", "\033[21~" }, { "F11", "\033[23~" }, { "F12", "\033[24~" },
};

bool eg_key_encode(const char *word, struct sbuf *b)
{
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcasecmp(word, keys[i].name)) {
			sbuf_puts(b, keys[i].seq);
			return true;
		}
	if (((word[0] == 'C' || word[0] == 'c') && word[1] == '-' && word[2] && !word[3]) ||
	    (word[0] == '^' && word[1] && !word[2])) {
		unsigned char c = word[0] == '^' ? word[1] : word[2];

		if (c == '?')
			sbuf_putc(b, 0x7f);
		else if (c == ' ' || c == '@' || c == '2')
			sbuf_putc(b, 0);
		else if (isalpha(c) || (c >= '[' && c <= '_'))
			sbuf_putc(b, toupper(c) & 0x1f);
		else
			goto literal;
		return true;
	}
	if ((word[0] == 'M' || word[0] == 'm') && word[1] == '-' && word[2] && !word[3]) {
		sbuf_putc(b, '\033');
		sbuf_putc(b, word[2]);
		return true;
	}
literal:
	sbuf_puts(b, word);
	return false;
}

int64_t eg_tail_offset(eg_pread_fn rd, void *arg, uint64_t start, uint64_t end, unsigned int n,
		       uint64_t max_scan)
{
	char buf[4096];
	uint64_t pos = end, scanned = 0;
	unsigned int seen = 0;
	bool first = true;

	if (!n || end <= start)
		return end > start ? end : start;
	while (pos > start && scanned < max_scan) {
		size_t len = pos - start < sizeof(buf) ? pos - start : sizeof(buf);
		ssize_t r;

		r = rd(arg, buf, len, pos - len);
		if (r < 0)
			return r;
		if ((size_t)r != len)
			return -EIO;
		for (size_t i = len; i > 0; i--) {
			if (buf[i - 1] != '\n')
				continue;
			if (first && pos - len + i == end) {
				/* the final newline ends the last line */
				first = false;
				continue;
			}
			first = false;
			if (++seen == n)
				return pos - len + i;
		}
		first = false;
		pos -= len;
		scanned += len;
	}
	return pos;
}

static ssize_t fd_pread(void *arg, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(*(int *)arg, buf, n, off);

	return r < 0 ? -errno : r;
}

int64_t eg_log_tail_offset(int fd, uint64_t size, unsigned int n, uint64_t max_scan)
{
	return eg_tail_offset(fd_pread, &fd, 0, size, n, max_scan);
}

static const struct { int sig; const char *name; } sigs[] = {
	{ SIGHUP, "HUP" }, { SIGINT, "INT" }, { SIGQUIT, "QUIT" }, { SIGILL, "ILL" },
	{ SIGTRAP, "TRAP" }, { SIGABRT, "ABRT" }, { SIGBUS, "BUS" }, { SIGFPE, "FPE" },
	{ SIGKILL, "KILL" }, { SIGUSR1, "USR1" }, { SIGSEGV, "SEGV" }, { SIGUSR2, "USR2" },
	{ SIGPIPE, "PIPE" }, { SIGALRM, "ALRM" }, { SIGTERM, "TERM" }, { SIGCHLD, "CHLD" },
	{ SIGCONT, "CONT" }, { SIGSTOP, "STOP" }, { SIGTSTP, "TSTP" }, { SIGTTIN, "TTIN" },
	{ SIGTTOU, "TTOU" }, { SIGURG, "URG" }, { SIGXCPU, "XCPU" }, { SIGXFSZ, "XFSZ" },
	{ SIGVTALRM, "VTALRM" }, { SIGPROF, "PROF" }, { SIGWINCH, "WINCH" }, { SIGSYS, "SYS" },
};

int eg_signal_parse(const char *s)
{
	char *end;
	long v;
	size_t i;

	if (!s || !*s)
		return -1;
	if (isdigit((unsigned char)s[0])) {
		v = strtol(s, &end, 10);
		return (*end || v < 1 || v > 64) ? -1 : (int)v;
	}
	if (!strncasecmp(s, "SIG", 3)) {
		s += 3;
		if (isdigit((unsigned char)s[0]))
			return eg_signal_parse(s);	/* SIG34, as eg_signal_name writes it */
	}
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcasecmp(s, sigs[i].name))
			return sigs[i].sig;
	return -1;
}

const char *eg_signal_name(int sig, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigs[i].sig == sig) {
			snprintf(buf, len, "SIG%s", sigs[i].name);
			return buf;
		}
	snprintf(buf, len, "SIG%d", sig);
	return buf;
}
