#!/usr/bin/env bash
# Builds the kind node image of the test bed on this machine, pulling no image (root; needs a Docker
# engine: scripts/host.sh docker-up). kind's own `kind build node-image` fetches a base image and
# the control-plane images; here everything comes from Debian's packages and the Go module proxy:
#
#   1. images kubeadm asks for at KUBE_VERSION (`kubeadm config images list`), each a one-layer
#      image of a binary from bin/ (scripts/tools.sh): kube-apiserver, kube-controller-manager,
#      kube-scheduler, etcd, pause, CoreDNS; kube-proxy on a minbase Debian rootfs (iptables userland).
#   2. the node's rootfs: Debian bookworm (debootstrap) with systemd, containerd, runc, the CNI
#      plugins and what kind's base image installs; kind's base files from the sigs.k8s.io/kind module
#      at KIND_VERSION; kubelet, kubeadm, kubectl; runc-nosysres; the pod network and egress-guard units.
#   3. the images of step 1 imported into the rootfs' containerd (k8s.io namespace), as kind's node
#      build does, so kubeadm never pulls.
#
# The image is tagged platform-operators/kind-node:KUBE_VERSION-HASH, HASH covering this script, its
# files, versions.env and the binaries: a second run finds it and costs a second. It prints the tag
# and writes it to bin/kind-node/node-image.
#
#   scripts/kind-node.sh          build (or find) the node image
#   scripts/kind-node.sh rootfs   only the Debian rootfs (no Go binaries needed; runs while tools build)
#
# KIND_NODE_KUBE=oldest builds the node of the oldest Kubernetes minor Chart.yaml declares instead
# (KUBE_OLDEST_VERSION, its binaries from bin/kube-oldest/ built by `scripts/tools.sh kube-oldest
# kube-oldest-node`): platform-operators/kind-node-oldest:..., worked on in bin/kind-node-oldest/,
# the image tags kubeadm of that version asks for read from it. `make test-e2e-kind-oldest`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
FILES=$ROOT/scripts/files
# shellcheck source=versions.env
source "$ROOT/scripts/versions.env"
REPO=platform-operators/kind-node
W=$BIN/kind-node
if [ "${KIND_NODE_KUBE:-}" = oldest ]; then
  KUBE_VERSION=$KUBE_OLDEST_VERSION REPO=$REPO-oldest W=$BIN/kind-node-oldest BIN=$BIN/kube-oldest
fi
DOCKER=${DOCKER:-/usr/bin/docker}
[ -x "$DOCKER" ] || DOCKER=docker
log() { printf '[kind-node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
mkdir -p "$W"

MIRROR=$("$ROOT/scripts/host.sh" mirror)
SUITE=bookworm

# debootstrap_into DIR PACKAGES: a minbase Debian rootfs, kept between runs (its package list is in DIR.pkgs).
debootstrap_into() {
  local dir=$1 pkgs=$2
  if [ "$(cat "$dir.pkgs" 2>/dev/null)" != "$SUITE $pkgs" ] || [ ! -x "$dir/usr/bin/dpkg" ]; then
    rm -rf "$dir"
    log "debootstrap $SUITE -> $dir (log $dir.log)"
    debootstrap --variant=minbase --include="$pkgs" "$SUITE" "$dir" "$MIRROR" >"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; exit 1; }
    echo "$SUITE $pkgs" >"$dir.pkgs"
  fi
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/usr/share/doc "$dir"/usr/share/man
}

KP=$W/kube-proxy-rootfs
R=$W/rootfs
KP_PKGS=iptables,nftables,conntrack,ipset,kmod
NODE_PKGS=systemd,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins,socat,ebtables,less
if [ "${1:-}" = rootfs ]; then
  # only the two Debian rootfs (network and disk, no Go binaries): can run while scripts/tools.sh builds
  debootstrap_into "$KP" "$KP_PKGS"
  debootstrap_into "$R" "$NODE_PKGS"
  exit 0
fi

# The names and tags kubeadm KUBE_VERSION asks for (`kubeadm config images list`). etcd is the Go
# proxy's v3.6.x under the tag kubeadm wants; kubeadm only checks that the image is present.
V=$KUBE_VERSION
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
# containerd's sandbox image (scripts/files/kind/containerd.toml), whatever kubeadm asks for
SANDBOX_IMAGE=registry.k8s.io/pause:3.10.2
ETCD_IMAGE=registry.k8s.io/etcd:3.6.8-0
COREDNS_IMAGE=registry.k8s.io/coredns/coredns:$COREDNS_VERSION
if [ "${KIND_NODE_KUBE:-}" = oldest ]; then
  # kubeadm only checks the images are present: the same pause, etcd and CoreDNS binaries under the
  # tags this kubeadm asks for.
  want=$("$BIN/kubeadm" config images list --kubernetes-version "$V")
  PAUSE_IMAGE=$(grep '/pause:' <<<"$want") ETCD_IMAGE=$(grep '/etcd:' <<<"$want") COREDNS_IMAGE=$(grep '/coredns:' <<<"$want")
fi
for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl etcd coredns pause; do
  [ -x "$BIN/$b" ] || { log "bin/$b is missing: run scripts/tools.sh (make tools) first"; exit 1; }
done
if [ "$("$BIN/kubeadm" config images list --kubernetes-version "$V" 2>/dev/null | sort | tr '\n' ' ')" != \
     "$(printf '%s\n' "$COREDNS_IMAGE" "$ETCD_IMAGE" registry.k8s.io/kube-{apiserver,controller-manager,proxy,scheduler}:"$V" "$PAUSE_IMAGE" | sort | tr '\n' ' ')" ]; then
  log "kubeadm $V asks for other images than this script builds:"; "$BIN/kubeadm" config images list --kubernetes-version "$V" >&2; exit 1
fi

hash=$( { cat "$0" "$ROOT/scripts/versions.env" "$FILES/runc-nosysres"; find "$FILES/kind" -type f | sort | xargs cat
          for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl etcd coredns pause; do sha256sum "$BIN/$b"; done; } |
        sha256sum | cut -c1-12)
IMAGE=$REPO:$V-$hash
if "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; then
  log "node image $IMAGE is up to date"
  echo "$IMAGE" | tee "$W/node-image"
  exit 0
fi
t0=$SECONDS
# one_binary_image IMAGE ENTRYPOINT SRC:DEST...: a one-layer image of static binaries.
one_binary_image() {
  local image=$1 ep=$2; shift 2
  local d; d=$(mktemp -d "$W/img.XXXXXX")
  mkdir -p "$d/etc" "$d/tmp" "$d/usr/local/bin"
  chmod 1777 "$d/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$d/etc/group"
  local m; for m in "$@"; do install -D -m 0755 "${m%%:*}" "$d/${m#*:}"; done
  tar -C "$d" --numeric-owner --owner=0 --group=0 -c . |
    "$DOCKER" import --change "ENTRYPOINT $ep" --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - "$image" >/dev/null
  rm -rf "$d"
}

# 1. the images
log "images for kubeadm $V"
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  one_binary_image "registry.k8s.io/$c:$V" "[\"/usr/local/bin/$c\"]" "$BIN/$c:usr/local/bin/$c"
done
one_binary_image "$ETCD_IMAGE" '["/usr/local/bin/etcd"]' "$BIN/etcd:usr/local/bin/etcd"
one_binary_image "$PAUSE_IMAGE" '["/pause"]' "$BIN/pause:pause"
[ "$SANDBOX_IMAGE" = "$PAUSE_IMAGE" ] || one_binary_image "$SANDBOX_IMAGE" '["/pause"]' "$BIN/pause:pause"
one_binary_image "$COREDNS_IMAGE" '["/coredns"]' "$BIN/coredns:coredns"
debootstrap_into "$KP" "$KP_PKGS"
install -m 0755 "$BIN/kube-proxy" "$KP/usr/local/bin/kube-proxy.bin"
install -m 0755 "$FILES/kind/kube-proxy-wrapper.sh" "$KP/usr/local/bin/kube-proxy"
tar -C "$KP" --numeric-owner -c . | "$DOCKER" import --change 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]' \
  --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin' - "registry.k8s.io/kube-proxy:$V" >/dev/null
images=(registry.k8s.io/kube-{apiserver,controller-manager,scheduler,proxy}:"$V" "$ETCD_IMAGE" "$PAUSE_IMAGE" "$COREDNS_IMAGE")
[ "$SANDBOX_IMAGE" = "$PAUSE_IMAGE" ] || images+=("$SANDBOX_IMAGE")
"$DOCKER" save -o "$W/images.tar" "${images[@]}"
log "${#images[@]} images saved ($(du -h "$W/images.tar" | cut -f1), $((SECONDS - t0)) s)"

# 2. the rootfs: what kind's base image installs, Debian's containerd/runc/CNI plugins
debootstrap_into "$R" "$NODE_PKGS"
KB=$(go env GOMODCACHE)/sigs.k8s.io/kind@$KIND_VERSION/images/base/files
[ -d "$KB" ] || (cd "$W" && GOFLAGS=-mod=mod go mod download "sigs.k8s.io/kind@$KIND_VERSION")
install -d "$R/kind/bin" "$R/etc/containerd" "$R/etc/default" "$R/etc/sysctl.d" "$R/etc/systemd/system/kubelet.service.d" \
  "$R/etc/kubernetes/manifests" "$R/etc/cni/net.d" "$R/opt/cni"
# kind's base files, as its base Dockerfile copies them
install -m 0755 "$KB"/usr/local/bin/* "$R/usr/local/bin/"
install -m 0755 "$KB"/kind/bin/* "$R/kind/bin/"
install -m 0644 "$KB"/etc/crictl.yaml "$R/etc/"
install -m 0644 "$KB"/etc/default/* "$R/etc/default/"
install -m 0644 "$KB"/etc/sysctl.d/* "$R/etc/sysctl.d/"
install -m 0644 "$KB"/etc/systemd/system/*.service "$KB"/etc/systemd/system/*.slice "$R/etc/systemd/system/"
install -m 0644 "$KB"/etc/systemd/system/kubelet.service.d/* "$R/etc/systemd/system/kubelet.service.d/"
# kind's units run /usr/local/bin/containerd; Debian installs /usr/bin/containerd
ln -sf /usr/bin/containerd "$R/usr/local/bin/containerd"
ln -sfn /usr/lib/cni "$R/opt/cni/bin"
rm -f "$R"/etc/cni/net.d/*
install -m 0644 "$FILES/kind/containerd.toml" "$R/etc/containerd/config.toml"
install -m 0755 "$FILES/runc-nosysres" "$R/usr/local/bin/runc-nosysres"
install -m 0755 "$FILES/kind/podnet.sh" "$R/usr/local/bin/po-podnet.sh"
install -m 0755 "$FILES/kind/crictl.sh" "$R/usr/local/bin/crictl"
install -m 0644 "$FILES/kind/podnet.service" "$R/etc/systemd/system/po-podnet.service"
install -m 0755 "$FILES/kind/egress-guard.sh" "$R/usr/local/bin/po-egress-guard.sh"
install -m 0644 "$FILES/kind/egress-guard.service" "$R/etc/systemd/system/po-egress-guard.service"
install -m 0755 "$BIN/kubelet" "$BIN/kubeadm" "$BIN/kubectl" "$R/usr/bin/"
echo "$V" >"$R/kind/version"
# kind's base Dockerfile RUN steps, replayed in the rootfs
chroot "$R" /bin/bash -euc '
  find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
  rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
        /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
        /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
  grep -q "^ReadKMsg=no" /etc/systemd/journald.conf || echo ReadKMsg=no >>/etc/systemd/journald.conf
  ln -sf /lib/systemd/systemd /sbin/init
  systemctl enable kubelet.service containerd.service undo-mount-hacks.service po-egress-guard.service po-podnet.service
  systemctl mask systemd-binfmt.service
  ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer | length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" |
    jq "del(.process.rlimits)" >/etc/containerd/cri-base.json
  : >/etc/machine-id
' >"$W/chroot.log" 2>&1 || { cat "$W/chroot.log" >&2; exit 1; }
log "rootfs ready ($((SECONDS - t0)) s)"

# 3. the images into the rootfs' containerd store, with a throw-away containerd of the node's version
S=$W/ctr-import
rm -rf "$S" "$R/var/lib/containerd"; mkdir -p "$S"
printf 'version = 2\nroot = "%s"\nstate = "%s"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "%s"\n' \
  "$R/var/lib/containerd" "$S/state" "$S/sock" >"$S/config.toml"
containerd --config "$S/config.toml" >"$S/containerd.log" 2>&1 &
cpid=$!
trap 'kill $cpid 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$S/sock" ] && break; sleep 0.1; done
ctr -a "$S/sock" -n k8s.io images import --all-platforms --no-unpack --digests "$W/images.tar" >"$S/import.log"
kill $cpid; wait $cpid 2>/dev/null || true; trap - EXIT
rm -f "$W/images.tar"
log "images imported into the node's containerd ($((SECONDS - t0)) s)"

# 4. the image: kind's base image config. `docker import --change` refuses STOPSIGNAL, so a
#    one-line Dockerfile FROM the imported rootfs (a local image: nothing is pulled) adds it.
#    systemd.legacy_systemd_cgroup_controller=1: in a container systemd reads its kernel command
#    line from PID 1's arguments. On a cgroup v1 host, systemd otherwise runs "hybrid" and mounts
#    cgroup2 at /sys/fs/cgroup/unified itself. When the Docker engine runs inside a container (CI's
#    Docker-in-Docker, a fresh-machine container), that engine does not see the unified hierarchy,
#    so every node shares the outer container's unified cgroup: the first node's systemd takes it
#    and each later node's kubelet fails with `cgroup ["kubelet" "kubepods"] has some missing
#    paths: /sys/fs/cgroup/systemd/kubelet.slice/kubelet-kubepods.slice`. Legacy mode keeps
#    systemd on the v1 name=systemd hierarchy, which the engine gives each node its own of. A
#    cgroup v2 host mounts cgroup2 at /sys/fs/cgroup and systemd ignores the switch.
tar -C "$R" --numeric-owner -c . | "$DOCKER" import - "$IMAGE-rootfs" >/dev/null
printf '%s\n' "FROM $IMAGE-rootfs" 'ENV container=docker' 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  'STOPSIGNAL SIGRTMIN+3' 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init", "systemd.legacy_systemd_cgroup_controller=1"]' |
  DOCKER_BUILDKIT=0 "$DOCKER" build -q --label "io.platform-operators.kind-node=$V" -t "$IMAGE" - >/dev/null
"$DOCKER" rmi "$IMAGE-rootfs" >/dev/null 2>&1 || true
# older node images of ours are replaced by this one
"$DOCKER" images "$REPO" --filter label=io.platform-operators.kind-node --format '{{.Repository}}:{{.Tag}}' |
  grep -vx "$IMAGE" | xargs -r "$DOCKER" rmi >/dev/null 2>&1 || true
log "node image $IMAGE built in $((SECONDS - t0)) s"
echo "$IMAGE" | tee "$W/node-image"
