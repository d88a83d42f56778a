// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Loading, attaching and pinning the tracer (bpf/execgate.bpf.c).
 *
 * A daemon picks up what an earlier one left pinned under its pin
 * directory: exec depths (tasks), tickets (both maps), counters, the ring buffer with
 * whatever is still queued in it, and the generation switch (control).
 * Its own programs attach with the next generation, then tracer_activate()
 * flips the switch: from that instant they act and the old copy (still
 * attached through a pinned or inherited link) does nothing until it is
 * detached. So a restart traces every exec exactly once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "execgate.h"
#include "execgate.skel.h"
#include "trace/migrate.h"
#include "trace/tracer.h"
#include "util/log.h"
#include "util/mounts.h"
#include "util/paths.h"

/*
 * Pinned under the pin path (docs/maps.md); "tasks" and "ctxnames" stay
 * when a daemon stops. Beside them, "procs" is a pinned iterator (EG_PROCS_PIN).
 */
const char *const tracer_pinned_maps[] = {
	"tasks", "ctxnames", "counters", "tickets", "tickets_small", "control", "events", "scripts", "chains",
	"loaders",
	/* kernel rules (enforce/kmaps.c) */
	EG_KMAPS_NAMES, NULL
};

static struct bpf_map *map_by_name(struct execgate_bpf *skel, const char *name)
{
	return bpf_object__find_map_by_name(skel->obj, name);
}

/* Same type, sizes and flags as the skeleton asks for: safe to load against. */
static bool compatible(const struct bpf_map *m, int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return false;
	return info.type == bpf_map__type(m) && info.key_size == bpf_map__key_size(m) &&
	       info.value_size == bpf_map__value_size(m) &&
	       info.max_entries == bpf_map__max_entries(m) && info.map_flags == bpf_map__map_flags(m);
}

/*
 * Reuses <dir>/<name> when compatible. Returns true if reused; a pin of
 * another layout (another version, another ring size) is left for the
 * caller (*ret_stale gets its fd, or -1).
 */
static bool reuse_pinned(struct bpf_map *m, const char *dir, const char *name, int *ret_stale)
{
	char path[PATH_MAX];
	int fd;

	if (ret_stale)
		*ret_stale = -1;
	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	if (!compatible(m, fd) || bpf_map__reuse_fd(m, fd)) {
		if (ret_stale)
			*ret_stale = fd;
		else
			close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* The kernel rules' maps (enforce/kmaps.c), in tracer_pinned_maps too. */
static const char *const rule_maps[] = { EG_KMAPS_NAMES, NULL };

/* Whether every rule map is pinned under dir in the layout this copy needs. */
static bool rules_reusable(struct execgate_bpf *skel, const char *dir)
{
	char path[PATH_MAX];
	bool ok;
	int fd;

	if (!dir)
		return false;
	for (size_t i = 0; rule_maps[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, rule_maps[i]);
		fd = bpf_obj_get(path);
		if (fd < 0)
			return false;
		ok = compatible(map_by_name(skel, rule_maps[i]), fd);
		close(fd);
		if (!ok)
			return false;
	}
	return true;
}

/* The rule sequence of the kstate pinned under dir, whatever its map's layout; 0: none. */
static uint32_t pinned_kseq(const char *dir)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0;
	struct eg_kstate st = {};
	char path[PATH_MAX];
	int fd;

	if (!dir)
		return 0;
	snprintf(path, sizeof(path), "%s/kstate", dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	/* struct eg_kstate is ABI: read only from a map that holds one */
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != BPF_MAP_TYPE_ARRAY ||
	    info.key_size != sizeof(zero) || info.value_size != sizeof(st) ||
	    bpf_map_lookup_elem(fd, &zero, &st))
		st.seq = 0;
	close(fd);
	return st.seq;
}

/* The running kernel's version is at least major.minor. */
static bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int a = 0, b = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &a, &b) != 2)
		return false;
	return a > major || (a == major && b >= minor);
}

/*
 * Whether the kernel may preempt kernel code (preempt=full, PREEMPT_RT):
 * 1 yes, 0 no (Debian's default: voluntary), -1 unknown. A fentry program
 * runs with only migration off, and the programs' per-CPU buffers assume
 * one user at a time: where a task can be preempted inside one, another
 * task's exec on that CPU would write into what it is reading.
 */
static int kernel_preempts(void)
{
	int cfg_rt = 0, cfg_dyn = 0, cfg_full = 0, seen = 0, mode = -1;
	char path[320], line[512];
	struct utsname u;
	gzFile z = NULL;
	FILE *f;

	f = fopen("/proc/cmdline", "re");
	if (f) {
		if (fgets(line, sizeof(line), f)) {
			const char *p = strstr(line, "preempt=");

			if (p && (p == line || p[-1] == ' '))
				mode = !strncmp(p + 8, "none", 4) || !strncmp(p + 8, "voluntary", 9) ? 0 : 1;
		}
		fclose(f);
	}
	if (uname(&u))
		return -1;
	snprintf(path, sizeof(path), "/boot/config-%s", u.release);
	f = fopen(path, "re");
	if (!f)
		z = gzopen("/proc/config.gz", "rb");
	while (f ? fgets(line, sizeof(line), f) != NULL : z && gzgets(z, line, sizeof(line)) != NULL) {
		if (strncmp(line, "CONFIG_PREEMPT", 14))
			continue;
		seen = 1;
		cfg_rt |= !strcmp(line, "CONFIG_PREEMPT_RT=y\n");
		cfg_dyn |= !strcmp(line, "CONFIG_PREEMPT_DYNAMIC=y\n");
		cfg_full |= !strcmp(line, "CONFIG_PREEMPT=y\n");
	}
	if (f)
		fclose(f);
	if (z)
		gzclose(z);
	if (!seen)
		return -1;
	if (cfg_rt)
		return 1;
	if (cfg_dyn && mode >= 0)
		return mode;
	return cfg_full;
}

/* Whether vmlinux BTF names a function (a static inline one it does not: nothing to attach to). */
static bool kernel_has_func(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found;

	if (!btf)
		return false;
	found = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) >= 0;
	btf__free(btf);
	return found;
}

/*
 * Whether the kernel has a tracepoint: its trace event in tracefs (the
 * daemon mounted it) answers in a stat; vmlinux BTF (a 5 MB parse) only
 * where tracefs has no events.
 */
static bool kernel_has_tracepoint(const char *group, const char *name)
{
	char path[PATH_MAX], type[128];
	struct btf *btf;
	bool found;

	snprintf(path, sizeof(path), EG_TRACEFS_DIR "/events/%s/%s", group, name);
	if (!access(path, F_OK))
		return true;
	if (!access(EG_TRACEFS_DIR "/events/sched", F_OK))
		return false;
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return false;
	snprintf(type, sizeof(type), "btf_trace_%s", name);
	found = btf__find_by_name(btf, type) >= 0;
	btf__free(btf);
	return found;
}

/*
 * A kernel symbol's address from /proc/kallsyms, or 0: what a typeless
 * __ksym gives, without libbpf's parse of every line (0.3 s at each load);
 * the scan stops at the symbol.
 */
static __u64 kallsyms_addr(const char *sym)
{
	char buf[65536 + 256], *line, *nl, *end;
	size_t len = strlen(sym), have = 0;
	unsigned long long addr;
	__u64 found = 0;
	ssize_t n;
	int fd;

	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (!found && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		have += n;
		buf[have] = '\0';
		line = buf;
		/* "ADDR T NAME\n", or "ADDR t NAME\t[module]\n" */
		while ((nl = strchr(line, '\n'))) {
			char *name = strchr(line, ' ');

			if (name && name + 3 < nl && name[2] == ' ' && (size_t)(nl - (name + 3)) == len &&
			    !memcmp(name + 3, sym, len)) {
				addr = strtoull(line, &end, 16);
				if (end == name)
					found = addr;
				break;
			}
			line = nl + 1;
		}
		have = buf + have - line;
		memmove(buf, line, have);
		if (have >= sizeof(buf) - 1)	/* a line longer than the buffer: not a symbol's */
			have = 0;
	}
	close(fd);
	return found;
}

/* -v: how close each program came to the verifier's 1M instruction limit */
static void log_verified(struct execgate_bpf *skel)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_program__fd(p) < 0 || bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			continue;
		p_dbg("program %s: %u instructions verified", bpf_program__name(p), info.verified_insns);
	}
}

/* The loader's own options (execgate.h), for the program that finds what it was asked to run. */
static int fill_ldso_opts(struct execgate_bpf *skel)
{
	static const char *const value[] = { EG_LDSO_OPTS_VALUE }, *const alone[] = { EG_LDSO_OPTS_ALONE };
	int fd = bpf_map__fd(skel->maps.ldso_opts);
	struct eg_ldso_opt k;
	__u32 v;
	size_t i;

	for (i = 0; i < sizeof(value) / sizeof(value[0]) + sizeof(alone) / sizeof(alone[0]); i++) {
		const char *o = i < sizeof(value) / sizeof(value[0]) ? value[i] :
				alone[i - sizeof(value) / sizeof(value[0])];

		memset(&k, 0, sizeof(k));
		strncpy(k.s, o, sizeof(k.s) - 1);
		v = i < sizeof(value) / sizeof(value[0]) ? EG_LDSO_OPT_VALUE : EG_LDSO_OPT_ALONE;
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* Names the kernel looks a file's name up in (32 bytes, zero-padded). */
static int fill_names(int fd, const char *const *names, size_t n)
{
	struct eg_ldso_opt k;
	__u32 one = 1;
	size_t i;

	for (i = 0; i < n; i++) {
		memset(&k, 0, sizeof(k));
		strncpy(k.s, names[i], sizeof(k.s) - 1);
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

/*
 * What tracer_start() and tracer_check() set alike before the load: the
 * maps' sizes, the programs' constants, and which programs load.
 */
static int skel_configure(struct execgate_bpf *skel, const struct tracer_opts *o, int ncpus)
{
	int err;

	skel->rodata->max_argv_bytes = o->max_argv_bytes;
	skel->rodata->scope_on = o->n_cgroups > 0;
	for (size_t i = 0; i < o->n_cgroups; i++)
		if (o->cgroup_levels[i] > skel->rodata->scope_max_level)
			skel->rodata->scope_max_level = o->cgroup_levels[i];
	/* wake the reader when an eighth of the ring is queued; its timer does the rest */
	skel->rodata->wakeup_bytes = o->ringbuf_size / 8;
	err = bpf_map__set_max_entries(skel->maps.events, o->ringbuf_size);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.scratch, ncpus);
	if (!err)
		err = bpf_map__set_value_size(skel->maps.scratch, EG_SCRATCH_SIZE(o->max_argv_bytes));
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.kscratch, 2 * ncpus);
	if (err)
		return err;
	/*
	 * sched_prepare_exec (6.10+) finds scripts best; older kernels do
	 * without (EXECGATE_NO_PREPARE_EXEC=1 does too: how the tests see a
	 * kernel that cannot pin a script to its file).
	 */
	if (!kernel_has_tracepoint("sched", "sched_prepare_exec") || getenv("EXECGATE_NO_PREPARE_EXEC") ||
	    getenv("EXECGATE_SCRIPTS_BY_LEVELS"))
		bpf_program__set_autoload(skel->progs.handle_prepare_exec, false);
	/*
	 * Without it, the same at each level of the exec after a script's
	 * (fentry on security_bprm_check), where the kernel allows it, is 6.0
	 * or later (struct file's layout the walk knows) and does not preempt
	 * kernel code (Debian 12's 6.1: voluntary preemption);
	 * EXECGATE_SCRIPTS_BY_LEVELS=1: that way on any kernel that can.
	 */
	if (!o->fentry || getenv("EXECGATE_NO_PREPARE_EXEC") ||
	    bpf_program__autoload(skel->progs.handle_prepare_exec) ||
	    (!getenv("EXECGATE_SCRIPTS_BY_LEVELS") && (!kernel_at_least(6, 0) || kernel_preempts() != 0)) ||
	    !kernel_has_func("security_bprm_check"))
		bpf_program__set_autoload(skel->progs.handle_bprm_level, false);
	/* BPF LSM: only where asked (and available); the kernel refuses it elsewhere */
	bpf_program__set_autoload(skel->progs.enforce_bprm, o->lsm);
	bpf_program__set_autoload(skel->progs.enforce_bprm_cgroup, o->lsm_cgroup);
	/* the procs view is attached where it is pinned (tracer_pin) */
	bpf_program__set_autoattach(skel->progs.iter_procs, false);
	/*
	 * --exec-failed=none: the exit tracepoints build no record; they stay
	 * attached for what they enforce (a kill at exec that bpf_send_signal
	 * refused is retried there, a failed session exec's ticket dropped).
	 */
	skel->rodata->report_failures = o->exec_failed;
	skel->rodata->host_pid_ns = o->host_pid_ns;
	/* BPF LSM checks each file of a session exec as the kernel opens it */
	skel->rodata->lsm_tickets = o->lsm || o->lsm_cgroup;
	skel->rodata->report_exits = o->exits;
	skel->rodata->fput_addr = kallsyms_addr("____fput");
	return 0;
}

/* Opened and configured (skel_configure), not loaded. */
static int skel_open(const struct tracer_opts *o, struct execgate_bpf **ret)
{
	int ncpus = libbpf_num_possible_cpus(), err;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	*ret = execgate_bpf__open();
	if (!*ret)
		return -errno;
	err = skel_configure(*ret, o, ncpus);
	if (err) {
		execgate_bpf__destroy(*ret);
		*ret = NULL;
	}
	return err;
}

/* What tracer_start() and tracer_check() put in the maps after the load: names, and the --cgroup scopes. */
static int skel_fill(struct execgate_bpf *skel, const struct tracer_opts *o)
{
	static const char *const shells[] = { EG_SHELL_NAMES }, *const interps[] = { EG_INTERP_NAMES };
	int err = fill_ldso_opts(skel);

	if (!err)
		err = fill_names(bpf_map__fd(skel->maps.shells), shells, sizeof(shells) / sizeof(shells[0]));
	if (!err)
		err = fill_names(bpf_map__fd(skel->maps.interps), interps, sizeof(interps) / sizeof(interps[0]));
	for (size_t i = 0; !err && i < o->n_cgroups && i < EG_SCOPES_MAX; i++) {
		struct eg_scope sp = {};
		__u32 k = i;

		err = tracer_scope_add(skel, o->cgroup_ids[i]);
		if (err)
			break;
		/* the path too: a cgroup made again there (a restarted container) is in scope at once */
		sp.len = strlen(o->cgroup_paths[i]);
		if (sp.len >= sizeof(sp.path))
			return -ENAMETOOLONG;
		memcpy(sp.path, o->cgroup_paths[i], sp.len);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.scope_paths), &k, &sp, BPF_ANY))
			err = -errno;
	}
	return err;
}

int tracer_check(const struct tracer_opts *o)
{
	struct execgate_bpf *skel;
	int err = skel_open(o, &skel);

	if (err)
		return err;
	/* a generation its own control map never switches to: attached, nothing runs past active() */
	skel->rodata->my_gen = 1;
	err = execgate_bpf__load(skel);
	if (!err) {
		log_verified(skel);
		err = skel_fill(skel, o);
	}
	if (!err)
		err = execgate_bpf__attach(skel);
	execgate_bpf__destroy(skel);
	return err;
}

int tracer_start(const struct tracer_opts *o, const char *pin_dir, struct execgate_bpf **ret_skel,
		 struct tracer_reuse *ret)
{
	struct execgate_bpf *skel;
	struct eg_control ctl = {};
	int err, fd, stale;
	__u32 zero = 0;

	memset(ret, 0, sizeof(*ret));
	ret->old_events_fd = -1;
	ret->old_tasks_fd = -1;
	err = skel_open(o, &skel);
	if (err)
		return err;
	/* what an earlier daemon left: pick it up */
	ret->tasks = reuse_pinned(skel->maps.tasks, pin_dir, "tasks", &stale);
	/* another layout: an older version's is copied over at the switch, another's dropped */
	if (stale >= 0 && tasks_old_layout(stale))
		ret->old_tasks_fd = stale;
	else if (stale >= 0)
		close(stale);
	/*
	 * The names of the context ids those tasks carry. With new tasks none
	 * carries one; the older layout's daemons kept no names (a pin beside
	 * one is a newer daemon's, from before a downgrade).
	 */
	if (ret->tasks)
		ret->ctxnames = reuse_pinned(skel->maps.ctxnames, pin_dir, "ctxnames", NULL);
	ret->control = reuse_pinned(skel->maps.control, pin_dir, "control", NULL);
	ret->counters = reuse_pinned(skel->maps.counters, pin_dir, "counters", NULL);
	reuse_pinned(skel->maps.tickets, pin_dir, "tickets", NULL);
	reuse_pinned(skel->maps.tickets_small, pin_dir, "tickets_small", NULL);
	reuse_pinned(skel->maps.scripts, pin_dir, "scripts", NULL);
	reuse_pinned(skel->maps.chains, pin_dir, "chains", NULL);
	reuse_pinned(skel->maps.loaders, pin_dir, "loaders", NULL);
	/*
	 * The kernel rules in force stay in force while this copy takes over.
	 * Their maps are shared all or none: an older copy must never see a
	 * switch (kstate) to a set it holds in another map.
	 */
	ret->rules = rules_reusable(skel, pin_dir);
	for (size_t i = 0; ret->rules && rule_maps[i]; i++)
		if (!reuse_pinned(map_by_name(skel, rule_maps[i]), pin_dir, rule_maps[i], NULL)) {
			err = -EBUSY;	/* unpinned meanwhile: a part only would mix two sets */
			goto fail;
		}
	if (!ret->rules)
		ret->old_kseq = pinned_kseq(pin_dir);
	/* a ring of another size cannot be shared: it is drained after the switch */
	ret->events = reuse_pinned(skel->maps.events, pin_dir, "events", &ret->old_events_fd);
	if (ret->control) {
		fd = bpf_map__fd(skel->maps.control);
		if (!bpf_map_lookup_elem(fd, &zero, &ctl))
			ret->prev_gen = ctl.active_gen;
	}
	/* the next generation: attached first, acting only once activated */
	skel->rodata->my_gen = ret->prev_gen + 1 ? ret->prev_gen + 1 : 1;

	err = execgate_bpf__load(skel);
	if (err)
		goto fail;
	log_verified(skel);
	err = skel_fill(skel, o);
	if (err)
		goto fail;
	err = execgate_bpf__attach(skel);
	if (err)
		goto fail;
	*ret_skel = skel;
	return 0;
fail:
	if (ret->old_events_fd >= 0)
		close(ret->old_events_fd);
	ret->old_events_fd = -1;
	if (ret->old_tasks_fd >= 0)
		close(ret->old_tasks_fd);
	ret->old_tasks_fd = -1;
	execgate_bpf__destroy(skel);
	return err;
}

/* The programs of generation gen act (their my_gen), every other copy attached returns at once. */
static int set_active_gen(struct execgate_bpf *skel, uint32_t gen)
{
	struct eg_control ctl = { .active_gen = gen };
	__u32 zero = 0;

	return bpf_map_update_elem(bpf_map__fd(skel->maps.control), &zero, &ctl, BPF_ANY) ? -errno : 0;
}

int tracer_activate(struct execgate_bpf *skel)
{
	return set_active_gen(skel, skel->rodata->my_gen);
}

int tracer_deactivate(struct execgate_bpf *skel, uint32_t prev_gen)
{
	return set_active_gen(skel, prev_gen);
}

int tracer_scope_add(struct execgate_bpf *skel, uint64_t cgroup_id)
{
	__u32 one = 1;

	return bpf_map_update_elem(bpf_map__fd(skel->maps.scope), &cgroup_id, &one, BPF_ANY) ? -errno : 0;
}

int tracer_scope_del(struct execgate_bpf *skel, uint64_t cgroup_id)
{
	return bpf_map_delete_elem(bpf_map__fd(skel->maps.scope), &cgroup_id) ? -errno : 0;
}

int tracer_add_launcher(struct execgate_bpf *skel, uint64_t dev, uint64_t ino)
{
	struct eg_file_key k = { dev, ino };
	__u32 one = 1;

	return bpf_map_update_elem(bpf_map__fd(skel->maps.launchers), &k, &one, BPF_ANY) ? -errno : 0;
}

/*
 * The loaders map as the daemon finds the loaders now: it is pinned, kept
 * across a handover, kill -9 and --persist, and nothing else removes an
 * entry. Those of images long gone filled it (64), and then no new
 * image's loader could be registered, nor the host's after a libc update
 * (E2BIG failed every start). Only entries not in keep go: the ones kept
 * are never missing meanwhile. The number removed, or -errno.
 */
int tracer_prune_loaders(struct execgate_bpf *skel, bool (*keep)(void *arg, uint64_t dev, uint64_t ino),
			 void *arg)
{
	int fd = bpf_map__fd(skel->maps.loaders), n = 0;
	struct eg_file_key k, next, gone[EG_LOADERS_MAX];
	int ngone = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!keep(arg, next.dev, next.ino) && ngone < EG_LOADERS_MAX)
			gone[ngone++] = next;
		k = next;
		prev = &k;
	}
	for (int i = 0; i < ngone; i++)
		if (!bpf_map_delete_elem(fd, &gone[i]))
			n++;
	return n;
}

int tracer_add_loader(struct execgate_bpf *skel, uint64_t dev, uint64_t ino)
{
	struct eg_file_key k = { dev, ino };
	__u32 one = 1;

	return bpf_map_update_elem(bpf_map__fd(skel->maps.loaders), &k, &one, BPF_ANY) ? -errno : 0;
}

/*
 * dir/procs: the procs view, an iterator over tasks (bpf/execgate.bpf.c,
 * iter_procs) that each read of the file runs. Pinned under another name,
 * then renamed over what was there (an earlier daemon's, or the LRU map
 * older versions kept), so a reader never finds none. A kernel that
 * refuses to attach it costs the view alone: said, not fatal.
 */
static void pin_procs(struct execgate_bpf *skel, const char *dir)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	int err;

	snprintf(path, sizeof(path), "%s/" EG_PROCS_PIN, dir);
	snprintf(tmp, sizeof(tmp), "%s_new", path);
	if (!skel->links.iter_procs) {
		skel->links.iter_procs = bpf_program__attach_iter(skel->progs.iter_procs, NULL);
		if (!skel->links.iter_procs) {
			p_warn("no procs view at %s: the kernel refused its iterator (%s)", path,
			       strerror(errno));
			return;
		}
	}
	unlink(tmp);
	err = bpf_link__pin(skel->links.iter_procs, tmp);
	if (!err && rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
	}
	if (err)
		p_warn("no procs view at %s: %s", path, strerror(-err));
}

static bool is_rule_map(const char *name)
{
	for (size_t i = 0; rule_maps[i]; i++)
		if (!strcmp(rule_maps[i], name))
			return true;
	return false;
}

static int pin_map(struct bpf_map *m, const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* we hold the daemon lock: a pin here is an earlier daemon's (maybe ours, reused) */
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return bpf_map__pin(m, path);
}

int tracer_pin(struct execgate_bpf *skel, const char *dir, bool rules)
{
	int i, err;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	for (i = 0; tracer_pinned_maps[i]; i++) {
		struct bpf_map *m = map_by_name(skel, tracer_pinned_maps[i]);

		if (!m)
			return -ENOENT;
		if (!rules && is_rule_map(tracer_pinned_maps[i]))
			continue;
		err = pin_map(m, dir, tracer_pinned_maps[i]);
		if (err)
			return err;
	}
	pin_procs(skel, dir);
	return 0;
}

void tracer_unpin_rules(const char *dir)
{
	char path[PATH_MAX];

	for (size_t i = 0; rule_maps[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, rule_maps[i]);
		unlink(path);
	}
}

int tracer_pin_rules(struct execgate_bpf *skel, const char *dir)
{
	for (size_t i = 0; rule_maps[i]; i++) {
		int err = pin_map(map_by_name(skel, rule_maps[i]), dir, rule_maps[i]);

		if (err)
			return err;
	}
	return 0;
}

void tracer_unpin(struct execgate_bpf *skel, const char *dir, bool all)
{
	char path[PATH_MAX];
	int i;

	if (!skel)
		return;
	for (i = 0; tracer_pinned_maps[i]; i++) {
		struct bpf_map *m = map_by_name(skel, tracer_pinned_maps[i]);

		/* depths and context ids outlive the daemon: the next one picks them up */
		if (!all && (!strcmp(tracer_pinned_maps[i], "tasks") || !strcmp(tracer_pinned_maps[i], "ctxnames")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, tracer_pinned_maps[i]);
		/* not pinned by this copy (rule maps it never took over): an earlier copy's */
		if (m && bpf_map__is_pinned(m))
			bpf_map__unpin(m, path);
	}
	/* by path: the link itself went with the detach */
	snprintf(path, sizeof(path), "%s/" EG_PROCS_PIN, dir);
	unlink(path);
}

int tracer_unpin_dir(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* links/: pinned links, one level down */
		if (de->d_type == DT_DIR) {
			int e = tracer_unpin_dir(path);

			if (e)
				err = e;
			continue;
		}
		if (unlink(path) && errno != ENOENT)
			err = -errno;
	}
	closedir(d);
	if (rmdir(dir) && errno != ENOENT)
		err = err ? err : -errno;
	return err;
}

/* What an object pinned at path is, by its anonymous inode's name: "bpf-link", "bpf-prog", "bpf-map". */
static bool pinned_is(int fd, const char *kind)
{
	char name[32], link[64], want[64];
	ssize_t n;

	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	n = readlink(name, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	snprintf(want, sizeof(want), "anon_inode:%s", kind);
	return !strcmp(link, want);
}

int tracer_pinned_progs(const char *dir, uint32_t *ids, int n, int max)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return n;
	while ((de = readdir(d)) && n < max) {
		struct bpf_link_info li;
		struct bpf_prog_info pi;
		__u32 len;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR) {
			n = tracer_pinned_progs(path, ids, n, max);
			continue;
		}
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (pinned_is(fd, "bpf-link")) {
			memset(&li, 0, sizeof(li));
			len = sizeof(li);
			if (!bpf_obj_get_info_by_fd(fd, &li, &len) && li.prog_id)
				ids[n++] = li.prog_id;
		} else if (pinned_is(fd, "bpf-prog")) {
			memset(&pi, 0, sizeof(pi));
			len = sizeof(pi);
			if (!bpf_obj_get_info_by_fd(fd, &pi, &len) && pi.id)
				ids[n++] = pi.id;
		}
		close(fd);
	}
	closedir(d);
	return n;
}

int tracer_wait_progs_gone(const uint32_t *ids, int n, int timeout_ms)
{
	struct timespec nap = { 0, 1000000 }, t0, t;
	int i, left;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		left = 0;
		/* ids are handed out cyclically: one of ours is not another program's this soon */
		for (i = 0; i < n; i++) {
			int fd = bpf_prog_get_fd_by_id(ids[i]);

			if (fd >= 0) {
				close(fd);
				left++;
			} else if (errno != ENOENT) {
				return -errno;	/* cannot tell (EPERM: no CAP_SYS_ADMIN) */
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (!left || (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= timeout_ms)
			return left;
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 32 * 1000000)
			nap.tv_nsec *= 2;
	}
}

void tracer_detach(struct execgate_bpf *skel)
{
	if (skel)
		execgate_bpf__detach(skel);
}

void tracer_destroy(struct execgate_bpf *skel)
{
	execgate_bpf__destroy(skel);
}

int tracer_read_counters(int map_fd, struct eg_counters *ret)
{
	int ncpus = libbpf_num_possible_cpus(), i;
	struct eg_counters *v;
	__u32 zero = 0;

	if (ncpus <= 0)
		return -EINVAL;
	v = calloc(ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(map_fd, &zero, v)) {
		int err = -errno;

		free(v);
		return err;
	}
	memset(ret, 0, sizeof(*ret));
	for (i = 0; i < ncpus; i++) {
		ret->exec += v[i].exec;
		ret->exec_failed += v[i].exec_failed;
		ret->lost_exec += v[i].lost_exec;
		ret->lost_exec_failed += v[i].lost_exec_failed;
		ret->argv_truncated += v[i].argv_truncated;
		ret->read_faults += v[i].read_faults;
		ret->storage_failed += v[i].storage_failed;
		ret->scratch_missing += v[i].scratch_missing;
		ret->record_too_big += v[i].record_too_big;
		ret->stash_lost += v[i].stash_lost;
		ret->procs_failed += v[i].procs_failed;
		ret->killed += v[i].killed;
		ret->kill_failed += v[i].kill_failed;
		ret->kjudged += v[i].kjudged;
		ret->kdenied += v[i].kdenied;
		ret->kerrors += v[i].kerrors;
		ret->kretries += v[i].kretries;
		ret->lsm_deferred += v[i].lsm_deferred;
		ret->other += v[i].other;
		ret->lost_other += v[i].lost_other;
		ret->exits += v[i].exits;
		ret->lost_exit += v[i].lost_exit;
	}
	free(v);
	return 0;
}
