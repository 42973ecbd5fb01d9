#!/usr/bin/env bash
# Builds the rocemend container image without pulling anything: the release binary (with the
# `etcd` feature, for the switch aggregators' sharding), stripped, on a `FROM scratch` root file
# system holding exactly the shared libraries `ldd` names, an /etc/passwd with the user rocemend
# (65532) and the directories the manifests mount (packaging/kubernetes/base).
#
#   packaging/container/build.sh                  build, tag localhost/rocemend:<version>
#   packaging/container/build.sh --save FILE      and write it as an OCI archive, for
#                                                 `ctr -n k8s.io images import FILE` on nodes
#                                                 or `podman load -i FILE`
#   packaging/container/build.sh --rootfs-only    assemble target/container/rootfs, no image
#
# Environment: TOOL (podman or buildah; the first found), IMAGE (the tag), STORAGE_DRIVER (vfs
# where the kernel has no overlay for it, as inside a container), ISOLATION (chroot inside a
# container, where podman cannot make namespaces).
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
IMAGE="${IMAGE:-localhost/rocemend:$VERSION}"
SAVE=""
ROOTFS_ONLY=0
while [ $# -gt 0 ]; do
	case "$1" in
	--save) SAVE="$2"; shift 2 ;;
	--rootfs-only) ROOTFS_ONLY=1; shift ;;
	*) echo "usage: $0 [--save FILE] [--rootfs-only]" >&2; exit 2 ;;
	esac
done

cargo build -j2 --release --locked --features etcd --bin rocemend
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
BIN="$TARGET_DIR/release/rocemend"
CONTEXT="$TARGET_DIR/container"
ROOTFS="$CONTEXT/rootfs"
rm -rf "$CONTEXT"
mkdir -p "$ROOTFS/usr/bin" "$ROOTFS/etc/rocemend" "$ROOTFS/var/lib/rocemend" "$ROOTFS/tmp"
chmod 1777 "$ROOTFS/tmp"
strip -o "$ROOTFS/usr/bin/rocemend" "$BIN"

# The libraries and the loader, each at the path the binary asks for (its interpreter, then
# what ld.so resolves): `ldd` prints "name => /path (addr)" and "/lib64/ld-linux… (addr)".
ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
	mkdir -p "$ROOTFS$(dirname "$lib")"
	cp -L "$lib" "$ROOTFS$lib"
done

cat >"$ROOTFS/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/usr/sbin/nologin
rocemend:x:65532:65532:rocemend:/var/lib/rocemend:/usr/sbin/nologin
PASSWD
cat >"$ROOTFS/etc/group" <<'GROUP'
root:x:0:
rocemend:x:65532:
GROUP
# The aggregators' user owns its state directory (the DaemonSet's root needs nothing); a build
# that is not root leaves it to the image's default user mapping.
if [ "$(id -u)" = 0 ]; then chown 65532:65532 "$ROOTFS/var/lib/rocemend"; fi
cp packaging/container/Containerfile "$CONTEXT/Containerfile"
echo "root file system: $ROOTFS ($(du -sh "$ROOTFS" | cut -f1)):"
(cd "$ROOTFS" && find . -type f | sort | sed 's/^\./  /')
[ "$ROOTFS_ONLY" = 1 ] && exit 0

TOOL="${TOOL:-$(command -v podman || command -v buildah || true)}"
[ -n "$TOOL" ] || { echo "neither podman nor buildah is installed (Debian packages podman, buildah)" >&2; exit 3; }
GLOBAL=()
[ -n "${STORAGE_DRIVER:-}" ] && GLOBAL+=(--storage-driver "$STORAGE_DRIVER")
BUILD=(build)
[ "$(basename "$TOOL")" = buildah ] && BUILD=(bud)
[ -n "${ISOLATION:-}" ] && BUILD+=(--isolation "$ISOLATION")
"$TOOL" "${GLOBAL[@]}" "${BUILD[@]}" -f "$CONTEXT/Containerfile" -t "$IMAGE" "$CONTEXT"
echo "built $IMAGE: $("$TOOL" "${GLOBAL[@]}" image inspect --format '{{.Size}}' "$IMAGE") bytes"
if [ -n "$SAVE" ]; then
	"$TOOL" "${GLOBAL[@]}" push "$IMAGE" "oci-archive:$SAVE:$IMAGE"
	echo "saved $IMAGE to $SAVE"
fi
