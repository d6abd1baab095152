#!/usr/bin/env bash
# README's set-up as a new user meets it: a Debian bookworm container with only Go, make, git and
# ca-certificates (no C compiler, no Docker, no yamllint), in which a clone of this checkout's HEAD
# runs the given make targets (default: `up test`, README's two commands), each timed.
#
#   scripts/fresh-machine.sh [TARGET...]     (root; a Docker engine; debootstrap)
#   FRESH=DIR  where the rootfs and the container's home live (default bin/fresh; the home keeps the
#              clone, its bin/ and Go caches between runs: `rm -rf bin/fresh/home` for a cold run)
#
# Only committed work is tried: the container clones this checkout and checks out HEAD (a commit
# on one of its branches). The container runs --privileged (its make starts a Docker engine of its
# own for kind), with its home on a host folder so that the inner engine's data root is not overlay
# on overlay. When the targets are done, `make down` stops what `make up` left running (the inner
# cluster and engine). Exit status: the first failed target's, else 0.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FRESH=${FRESH:-$ROOT/bin/fresh}
DOCKER=${DOCKER:-/usr/bin/docker}
GOROOT_HOST=$(go env GOROOT)
GOVERSION=$(go env GOVERSION)
IMAGE=platform-operators/fresh-bookworm:$GOVERSION
log() { printf '[fresh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
[ $# -gt 0 ] || set -- up test

if ! "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; then
  MIRROR=$("$ROOT/scripts/host.sh" mirror)
  R=$FRESH/rootfs
  rm -rf "$R"; mkdir -p "$FRESH"
  log "debootstrap bookworm -> $R (log $R.log)"
  debootstrap --variant=minbase --include=make,git,ca-certificates bookworm "$R" "$MIRROR" >"$R.log" 2>&1 ||
    { tail -20 "$R.log" >&2; exit 1; }
  # This machine's CA bundle (a network that inspects TLS needs its CA; a user's machine has its own).
  cp /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"
  cp /etc/resolv.conf "$R/etc/resolv.conf"
  cp -a "$GOROOT_HOST" "$R/usr/local/go"
  rm -rf "$R"/var/cache/apt/archives/*.deb
  tar -C "$R" --numeric-owner -c . | "$DOCKER" import -c 'ENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$IMAGE" >/dev/null
  rm -rf "$R"
  log "image $IMAGE: bookworm minbase, make, git, ca-certificates, $GOVERSION"
fi

mkdir -p "$FRESH/home"
commit=$(git -C "$ROOT" rev-parse HEAD)
log "trying $commit: make $* (home $FRESH/home, log $FRESH/home/run.log)"
# The steps inside: clone (or update the clone), then each target timed; `make down` at the end.
inside='
set -uo pipefail
cd /root
# /src may belong to another user than root: git refuses such a repository unless told it is safe.
git config --global --add safe.directory "*"
[ -d po ] || git clone -q /src po
cd po && git fetch -q origin && git checkout -q --detach "$COMMIT" && git log --oneline -1 || exit 1
rc=0
for t in "$@"; do
  s=$SECONDS
  echo "=== $(date -u +%T) make $t"
  make "$t"; r=$?
  echo "=== $(date -u +%T) make $t: exit $r in $((SECONDS - s)) s"
  [ $r = 0 ] || { rc=$r; break; }
done
# what `make up` left running (a cluster, the inner engine); nothing to build when it never ran
if [ -d .cluster ] || [ -f bin/docker/dockerd.pid ]; then make down >/dev/null 2>&1 || true; fi
exit $rc
'
# A git worktree's .git is a file naming its git directory inside the main checkout's: that
# directory is mounted (read-only) at the same path, or the clone of /src finds no repository.
mounts=(-v "$FRESH/home:/root" -v "$ROOT:/src:ro")
common=$(cd "$ROOT" && cd "$(git rev-parse --git-common-dir)" && pwd)
case $common in "$ROOT"/*) ;; *) mounts+=(-v "$common:$common:ro") ;; esac
set +e
"$DOCKER" run --rm --privileged --name "platform-operators-fresh-$$" -e COMMIT="$commit" \
  "${mounts[@]}" "$IMAGE" bash -c "$inside" fresh "$@" 2>&1 | tee "$FRESH/home/run.log"
rc=${PIPESTATUS[0]}
log "done: exit $rc"
exit "$rc"
