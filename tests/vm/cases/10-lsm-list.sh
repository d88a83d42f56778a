# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The kernel runs BPF LSM programs only if bpf is an active LSM: booted with
# lsm=...,bpf, /sys/kernel/security/lsm must name it. Every LSM case below
# depends on this one.
. "$EG_LIB"

list=/sys/kernel/security/lsm
[ -r "$list" ] || fail "$list unreadable: is securityfs mounted?"
lsms=$(cat "$list")
echo "active LSMs: $lsms"
case ",$lsms," in
*,bpf,*) pass "bpf is an active LSM ($lsms)" ;;
*)       fail "bpf not in $list ($lsms); check lsm= in tests/vm/run.sh" ;;
esac
