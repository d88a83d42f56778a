# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# `execgate probe` on a kernel with BPF LSM: bpf_lsm and bpf_lsm_cgroup are
# available and the daemon's kernel enforcement mode is bpf_lsm, in both the
# table and --json. (On the 6.18 host the same probe must say unavailable:
# tests/integration/test_probe.py.)
. "$EG_LIB"

"$EG" probe > probe.txt 2> probe.err || fail "execgate probe exited $?: $(tail -n 1 probe.err)"
cat probe.txt
"$EG" probe --json > probe.json 2> probe.err || fail "execgate probe --json exited $?: $(tail -n 1 probe.err)"
cat probe.json

for f in btf ringbuf task_storage tracepoint tp_btf bpf_lsm bpf_lsm_cgroup send_signal \
	 seccomp_notif pidfd; do
	grep -Eq "^$f +available( |$)" probe.txt ||
		fail "table: $f not available: $(grep -E "^$f " probe.txt)"
	grep -Fq "\"$f\":{\"available\":true" probe.json ||
		fail "--json: $f not available: $(grep -o "\"$f\":{[^}]*}" probe.json)"
done
grep -Fxq 'mode: tracer=tp_btf kernel_enforcement=bpf_lsm session_enforcement=seccomp_notify exec_failed_source=syscall_tracepoints' probe.txt ||
	fail "table: wrong mode line: $(tail -n 1 probe.txt)"
grep -Fq '"mode":{"tracer":"tp_btf","kernel_enforcement":"bpf_lsm","session_enforcement":"seccomp_notify","exec_failed_source":"syscall_tracepoints"}' probe.json ||
	fail "--json: wrong mode: $(grep -o '"mode":{[^}]*}' probe.json)"
pass "bpf_lsm and bpf_lsm_cgroup available, kernel_enforcement=bpf_lsm"
