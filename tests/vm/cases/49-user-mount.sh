# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A path of a user's own mount, refused by the BPF LSM (6.1): a user in a
# user namespace of their own mounts a tmpfs over a directory an allow by
# a glob covers and runs a program of their own there: EPERM at
# bprm_check_security. A bind of their directory there, a single file
# bound over an allowed one, and a namespace nested in theirs (which
# locks their own mounts as the host's) the same. The host's own programs
# there run by the identity of a literal path (busybox), not by the glob.
# egvm-timeout: 150
. "$EG_LIB"

mkdir -p /bin/egvm-games own
cp "$EG_HELPERS/marker" own/x
chmod 755 . own own/x
# the user may make user namespaces here at all (Debian's default), or the case says why not
ASUSER=$EG_HELPERS/static_asuser
"$ASUSER" 65534 unshare -Urm true 2> userns.err ||
	skip "no user namespace for an unprivileged user here: $(cat userns.err)"
cat > p.yaml <<EOF
default_decision: deny
commands:
  - {name: system, paths: ['/bin/*', '/sbin/*', '/usr/*', '$ASUSER'], decision: allow}
  - {name: tools, paths: [/bin/busybox], decision: allow}
EOF
mkdir -p /sys/fs/cgroup/egvm-um
daemon_start --enforce --policy p.yaml --cgroup /sys/fs/cgroup/egvm-um
as_user() {
	in_cgroup egvm-um "$ASUSER" 65534 unshare -Urm sh -c "$1"
}
out=$(as_user 'true && echo host-ran' 2>&1)
[ "$out" = host-ran ] || { daemon_diag; fail "the host's own program in the user's namespace: $out"; }
for way in "mount -t tmpfs none /bin/egvm-games && cp $PWD/own/x /bin/egvm-games/x:/bin/egvm-games/x" \
	   "mount --bind $PWD/own /bin/egvm-games:/bin/egvm-games/x" \
	   "mount --bind $PWD/own/x /bin/true:/bin/true" \
	   "mount -t tmpfs none /bin/egvm-games && cp $PWD/own/x /bin/egvm-games/x && exec unshare -Urm /bin/egvm-games/x:/bin/egvm-games/x"; do
	setup=${way%:*} prog=${way##*:}
	rm -f /tmp/egmarker
	case $setup in
	*"exec unshare"*) out=$(as_user "$setup USERMNT" 2>&1) ;;	# the nested namespace's exec
	*) out=$(as_user "$setup || exit 99; exec $prog USERMNT" 2>&1) ;;
	esac
	rc=$?
	[ ! -e /tmp/egmarker ] || { daemon_diag; fail "the user's own program ran by $prog ($setup)"; }
	{ [ "$rc" -ne 0 ] && [ "$rc" -ne 99 ] && echo "$out" | grep -q 'Operation not permitted'; } ||
		{ daemon_diag; fail "$setup; $prog: status $rc, expected EPERM: $out"; }
done
wait_line 20 "$EV" '"type":"exec_failed"' '"layer":"kernel-lsm"' '"USERMNT"' ||
	{ daemon_diag; fail "no refused exec_failed record"; }
daemon_stop
pass "a user's own mount: refused by path; the host's programs ran by identity"
