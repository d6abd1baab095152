#!/usr/bin/env bash
# Host parts of the test bed, from Debian's packages only (root; idempotent; nothing else is downloaded).
#
#   scripts/host.sh packages     apt-get install what `make test` and `make up` need and the machine lacks
#   scripts/host.sh docker-up    make a Docker engine answer: use a working one, else start Debian's dockerd
#                                (data root under bin/docker, default runtime: the runc wrapper), pid in bin/docker/dockerd.pid
#   scripts/host.sh docker-down  stop the dockerd that docker-up started (by its pid); an engine we did not start is left alone
#   scripts/host.sh with-docker CMD...  run CMD with an engine up; stop it afterwards (even when CMD fails) if this started it
#   scripts/host.sh busybox      bin/busybox/busybox: Debian's static busybox, for the job test image (downloaded, not installed)
#   scripts/host.sh mirror       print the Debian mirror apt uses (for debootstrap; $MIRROR wins)
#
# Packages: yamllint (make test-chart), jq (the runc wrapper), gcc and libc6-dev (cgo, which `go test -race` needs), docker.io (engine, containerd, runc),
# debootstrap (the kind node image's rootfs), containerd (importing images into that rootfs),
# docker-registry (the test bed's registry, Harbor's role), busybox-static (the job test image; only downloaded).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
D=$BIN/docker
# The engine's own client: Debian's, which speaks the 20.10 engine's API (another `docker` may come first on PATH).
DOCKER=${DOCKER:-/usr/bin/docker}
log() { printf '[host %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

packages() {
  local want=(yamllint jq "$@") need=() p
  for p in "${want[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p"); done
  [ ${#need[@]} -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || { log "missing Debian packages: ${need[*]} (run as root, or install them)"; exit 1; }
  log "apt-get install ${need[*]}"
  # bin/ holds the apt log: a fresh clone has none yet (packages runs before tools).
  mkdir -p "$BIN"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need[@]}" >"$BIN/.apt.log" 2>&1 || { tail -20 "$BIN/.apt.log"; exit 1; }
}

engine_answers() { "$DOCKER" info >/dev/null 2>&1; }

docker_up() {
  mkdir -p "$BIN"
  if [ -x "$DOCKER" ] && engine_answers; then
    log "Docker engine answers ($("$DOCKER" version -f '{{.Server.Version}}')): using it"
    return
  fi
  packages docker.io
  install -D -m 0755 "$ROOT/scripts/files/runc-nosysres" "$D/runc-nosysres"
  mkdir -p "$D/data"
  log "starting dockerd (data root $D/data, default runtime runc-nosysres, log $D/dockerd.log)"
  # setsid: dockerd outlives this script and the make that ran it; it is stopped by docker-down.
  # It keeps no descriptor but its log: one inherited from the caller (a `flock FILE make ...`
  # holding a lock, a pipe a CI runner waits to close) would stay held for as long as the engine runs.
  (
    for fd in /proc/"$BASHPID"/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
    done
    exec setsid dockerd --data-root "$D/data" --pidfile "$D/dockerd.pid" \
      --add-runtime "nosysres=$D/runc-nosysres" --default-runtime nosysres \
      >"$D/dockerd.log" 2>&1 </dev/null
  ) &
  local i
  for i in $(seq 120); do engine_answers && break; sleep 0.5; done
  engine_answers || { log "dockerd did not answer in 60 s:"; tail -20 "$D/dockerd.log" >&2; exit 1; }
  log "dockerd $("$DOCKER" version -f '{{.Server.Version}}') up, pid $(cat "$D/dockerd.pid")"
}

docker_down() {
  local pid
  pid=$(cat "$D/dockerd.pid" 2>/dev/null) || { log "no dockerd of ours to stop"; return 0; }
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping dockerd (pid $pid)"
    kill "$pid"
    local i; for i in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && { log "dockerd (pid $pid) still running after 30 s: SIGKILL"; kill -9 "$pid"; }
  fi
  rm -f "$D/dockerd.pid"
}

busybox() {
  local d=$BIN/busybox
  [ -x "$d/busybox" ] && return 0
  mkdir -p "$d"
  rm -rf "$d/pkg" && mkdir -p "$d/pkg"
  (cd "$d/pkg" && apt-get download busybox-static >/dev/null 2>&1) || { apt-get update -qq >/dev/null && (cd "$d/pkg" && apt-get download busybox-static >/dev/null); }
  dpkg-deb -x "$d"/pkg/busybox-static_*.deb "$d/pkg/x"
  install -m 0755 "$d/pkg/x/bin/busybox" "$d/busybox"
  basename "$d"/pkg/busybox-static_*.deb >"$d/version"
  rm -rf "$d/pkg"
  log "busybox: $(cat "$d/version")"
}

# mirror: the Debian mirror of apt's sources (deb822 first, then the one-line format), or $MIRROR.
mirror() {
  local m=${MIRROR:-}
  [ -n "$m" ] || m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$m" ] || m=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$m" ] || { log "no Debian mirror found in apt's sources: set MIRROR"; exit 1; }
  echo "$m"
}

# with_docker CMD...: docker-up, CMD, and docker-down by pid when docker-up started the engine.
with_docker() {
  local started=0
  if ! { [ -x "$DOCKER" ] && engine_answers; }; then started=1; fi
  docker_up
  if [ $started = 1 ]; then trap docker_down EXIT; fi
  "$@"
}

case ${1:-} in
  packages) shift; packages "$@" ;;
  docker-up) docker_up ;;
  docker-down) docker_down ;;
  busybox) busybox ;;
  mirror) mirror ;;
  with-docker) shift; with_docker "$@" ;;
  *) echo "usage: $0 packages [PKG...]|docker-up|docker-down|with-docker CMD...|busybox|mirror" >&2; exit 2 ;;
esac
