#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The OCI image localhost/execgate:latest (make image), with podman and no
# registry: FROM scratch, the built binary, the shared libraries it links
# (ldd) and the example policies. ENTRYPOINT execgate; CMD the daemon
# writing JSON lines to stdout (docs/fleet.md).
#   tools/build-image.sh BINARY [TAG]
set -euo pipefail
bin=$1
tag=${2:-localhost/execgate:latest}
cd "$(dirname "$0")/.."
work=$(dirname "$bin")/image
rm -rf "$work"
mkdir -p "$work/root/usr/sbin" "$work/root/etc/execgate" "$work/root/run/execgate" "$work/root/tmp" \
	"$work/root/var/lib/execgate/procs" "$work/root/var/log/execgate" \
	"$work/root/sys/fs/bpf" "$work/root/proc"
install -m 0755 "$bin" "$work/root/usr/sbin/execgate"
# the libraries at the paths the loader looks for them, and the loader
for lib in $(ldd "$bin" | awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
	mkdir -p "$work/root$(dirname "$lib")"
	cp -L "$lib" "$work/root$lib"
done
install -m 0644 policy/*.yaml "$work/root/etc/execgate/"
# user names in the text view and --uid NAME (glibc reads files without a module)
printf 'root:x:0:0:root:/:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n' > "$work/root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$work/root/etc/group"
printf 'passwd: files\ngroup: files\n' > "$work/root/etc/nsswitch.conf"
version=$(sed -n 's/^#define EG_VERSION "\(.*\)"/\1/p' userspace/util/version.h)
cat > "$work/Containerfile" <<EOC
FROM scratch
COPY root/ /
LABEL org.opencontainers.image.title="execgate" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.description="kernel-assisted exec tracer and enforcer: one agent per node"
ENTRYPOINT ["/usr/sbin/execgate"]
CMD ["daemon", "--format", "json"]
EOC
podman build --quiet --no-cache -t "$tag" -f "$work/Containerfile" "$work" >/dev/null
echo "$tag"
