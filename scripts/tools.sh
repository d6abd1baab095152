#!/usr/bin/env bash
# Builds every pinned tool the project needs into bin/ (ignored by git), from the Go module proxy.
# Versions come from scripts/versions.env. A tool is rebuilt only when its version (or the Go
# toolchain) changed, so a second run with nothing changed takes seconds.
#
#   scripts/tools.sh            build whatever is missing or stale (every tool: what make test needs)
#   scripts/tools.sh kube helm  build only the named tools
#   scripts/tools.sh up         build only a named set (sets below): what `make up` runs, no test tools
#
# Cold run on 2 cores: ~25 min (kube-apiserver alone ~8 min, kubelet ~3, coredns ~2). Progress goes to stderr; the full
# output of a step is in bin/.build/<tool>.log, and a failed step names the tool and shows its tail.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
BUILD=$BIN/.build
STAMPS=$BIN/.stamps
# shellcheck source=versions.env
source "$ROOT/scripts/versions.env"
mkdir -p "$BIN" "$BUILD" "$STAMPS"
# bin/ is a module of its own to the go command, so `go vet ./...` and golangci-lint never walk into
# it (the kind node's rootfs, with /proc mounted while it is built, lives under bin/kind-node).
[ -f "$BIN/go.mod" ] || printf 'module platform-operators.local/bin\n' >"$BIN/go.mod"
export GOBIN=$BIN GOFLAGS=-buildvcs=false CGO_ENABLED=0
GOVERSION=$(go env GOVERSION)

log() { printf '[tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# run TOOL CMD...: runs one build step, output to bin/.build/TOOL.log; on failure names the tool.
run() {
  local tool=$1; shift
  if ! "$@" >>"$BUILD/$tool.log" 2>&1; then
    log "FAILED building $tool: '$*' (last lines of $BUILD/$tool.log follow)"
    tail -n 25 "$BUILD/$tool.log" >&2
    exit 1
  fi
}

# fresh TOOL STAMP FILES...: true when every file exists and the stamp matches.
fresh() {
  local tool=$1 stamp=$2; shift 2
  [ "$(cat "$STAMPS/$tool" 2>/dev/null)" = "$stamp $GOVERSION" ] || return 1
  local f; for f in "$@"; do [ -x "$BIN/$f" ] || return 1; done
}
done_stamp() { echo "$2 $GOVERSION" >"$STAMPS/$1"; }

# step TOOL STAMP FILES -- FUNCTION: build unless fresh, with timing.
step() {
  local tool=$1 stamp=$2; shift 2
  local files=(); while [ "$1" != "--" ]; do files+=("$1"); shift; done; shift
  if fresh "$tool" "$stamp" "${files[@]}"; then log "$tool $stamp: up to date"; return; fi
  log "$tool $stamp: building (log: $BUILD/$tool.log)"
  : >"$BUILD/$tool.log"
  local t0=$SECONDS
  "$@"
  done_stamp "$tool" "$stamp"
  log "$tool $stamp: done in $((SECONDS - t0))s"
}

# A throwaway module in bin/.build/NAME with go.mod written from versions.env.
module_dir() { local d=$BUILD/mod-$1; mkdir -p "$d"; echo "$d"; }

# The Kubernetes module: k8s.io/kubernetes at KUBE_VERSION, with every ./staging replace of its go.mod
# pointed at the published module of the same release, and a tools.go importing every command we build.
# kube_module TOOL [VERSION]: the module for VERSION (default KUBE_VERSION), in bin/.build/mod-kube[-VERSION].
kube_module() {
  local version=${2:-$KUBE_VERSION} name=kube
  [ "$version" = "$KUBE_VERSION" ] || name=kube-$version
  local d; d=$(module_dir "$name")
  local staging="v0.${version#v1.}"
  run "$1" go mod download "k8s.io/kubernetes@$version"
  local gomod
  gomod="$(go env GOMODCACHE)/k8s.io/kubernetes@$version/go.mod"
  {
    echo "module platform-operators.local/tools/$name"
    echo "go $(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')"
    echo "require k8s.io/kubernetes $version"
    echo "replace ("
    grep -E '^\s+k8s.io/[a-z0-9-]+ => ./staging' "$gomod" | awk -v v="$staging" '{print "\t"$1" => "$1" "v}'
    echo ")"
  } >"$d/go.mod"
  { printf '//go:build tools\n\npackage tools\n\nimport (\n'
    local c; for c in "${KUBE_CMDS[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
    printf ')\n'; } >"$d/tools.go"
  (cd "$d" && run "$1" go mod tidy)
}

# Control plane (envtest, kwok, the kind node's static pods) and node (kubelet, kubeadm, kubectl,
# kube-proxy for the kind node image) commands, all from the one module.
KUBE_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubeadm kubectl kube-proxy)

# build_kube_cmds TOOL CMD...: builds the commands with the version stamped in (without ldflags
# the binaries report v0.0.0-master, which kubeadm refuses).
build_kube_cmds() {
  local tool=$1; shift
  kube_module "$tool"
  local d; d=$(module_dir kube)
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  local c
  for c in "$@"; do
    log "$tool: $c"
    (cd "$d" && run "$tool" go build -trimpath -ldflags "$ld" -o "$BIN/$c" "k8s.io/kubernetes/cmd/$c")
  done
}
build_kube() { build_kube_cmds kube kube-apiserver kube-controller-manager kube-scheduler; }

# The oldest Kubernetes minor Chart.yaml declares (KUBE_OLDEST_VERSION): its kube-apiserver in
# bin/kube-oldest/, with etcd beside it, so envtest runs there (KUBEBUILDER_ASSETS=bin/kube-oldest)
# for `make test-oldest-kube`; kube-oldest-node adds the other commands a kind node of that version
# needs (scripts/kind-node.sh with BIN=bin/kube-oldest). Built from the same proxy with the same Go.
build_kube_oldest() { build_kube_oldest_cmds kube-oldest kube-apiserver; }
build_kube_oldest_node() {
  build_kube_oldest_cmds kube-oldest-node kube-controller-manager kube-scheduler kubelet kubeadm kubectl kube-proxy
  local b; for b in etcd coredns pause; do ln -sf "../$b" "$BIN/kube-oldest/$b"; done
}
build_kube_oldest_cmds() {
  local tool=$1; shift
  local v=$KUBE_OLDEST_VERSION minor
  minor=${v#v1.}; minor=${minor%%.*}
  kube_module "$tool" "$v"
  local d; d=$(module_dir "kube-$v")
  mkdir -p "$BIN/kube-oldest"
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  local c; for c in "$@"; do
    log "$tool: $c"
    (cd "$d" && run "$tool" go build -trimpath -ldflags "$ld" -o "$BIN/kube-oldest/$c" "k8s.io/kubernetes/cmd/$c")
  done
  ln -sf ../etcd "$BIN/kube-oldest/etcd"
}
build_kube_node() { build_kube_cmds kube-node kubelet kubeadm kubectl kube-proxy; }

build_coredns() {
  local d; d=$(module_dir coredns)
  printf 'module platform-operators.local/tools/coredns\n\ngo 1.24\n' >"$d/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/coredns/coredns"\n' >"$d/tools.go"
  (cd "$d" && run coredns go get "github.com/coredns/coredns@$COREDNS_VERSION" && run coredns go mod tidy \
    && run coredns go build -trimpath -ldflags "-s -w" -o "$BIN/coredns" github.com/coredns/coredns)
}

# pause: the pod sandbox's process (scripts/files/pause), versioned by its source.
build_pause() {
  local d; d=$(module_dir pause)
  cp "$ROOT/scripts/files/pause/main.go" "$d/main.go"
  printf 'module platform-operators.local/tools/pause\n\ngo 1.24\n' >"$d/go.mod"
  (cd "$d" && run pause go build -trimpath -ldflags "-s -w" -o "$BIN/pause" .)
}

build_etcd() {
  local d; d=$(module_dir etcd)
  cat >"$d/go.mod" <<MOD
module platform-operators.local/tools/etcd
go 1.24
require go.etcd.io/etcd/server/v3 $ETCD_VERSION
replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
MOD
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$d/tools.go"
  (cd "$d" && run etcd go mod tidy && run etcd go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
}

build_kwok() { run kwok go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"; }

build_helm() {
  # A source-built helm assumes Kubernetes v1.20 for template/lint; stamp the real server version
  # (in v3 the vars live in pkg/chartutil for template/install and pkg/lint/rules for lint).
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*} p=helm.sh/helm/v3/pkg
  run helm go install -trimpath -ldflags "-s -w -X $p/chartutil.k8sVersionMajor=1 -X $p/chartutil.k8sVersionMinor=$minor -X $p/lint/rules.k8sVersionMajor=1 -X $p/lint/rules.k8sVersionMinor=$minor -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

build_kind() { run kind go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"; }

build_controller_gen() { run controller-gen go install -trimpath -ldflags "-s -w" "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"; }

build_helm_docs() { run helm-docs go install -trimpath -ldflags "-s -w" "github.com/norwoodj/helm-docs/cmd/helm-docs@$HELM_DOCS_VERSION"; }

build_ct() {
  # `go install` of ct fails against the proxy (403 on the version list); a module with a `tool`
  # line pinned to the version builds it, as `go tool ct` would.
  local d; d=$(module_dir ct)
  printf 'module platform-operators.local/tools/ct\n\ngo 1.24\n' >"$d/go.mod"
  (cd "$d" && run ct go get -tool "github.com/helm/chart-testing/v3/ct@$CT_VERSION" \
    && run ct go build -trimpath -ldflags "-s -w" -o "$BIN/ct" github.com/helm/chart-testing/v3/ct)
}

# golangci-lint with the Kube API Linter (kubeapilinter in .golangci.yml): KAL's command is
# golangci-lint's main with KAL's analyzers registered; built in a module that requires both, so
# golangci-lint is the pinned release and not the older one KAL's go.mod names.
build_golangci_lint() {
  local d; d=$(module_dir golangci-lint)
  printf 'module platform-operators.local/tools/golangci-lint\n\ngo 1.26\n' >"$d/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter"\n' >"$d/tools.go"
  (cd "$d" && run golangci-lint go get "github.com/golangci/golangci-lint/v2@$GOLANGCI_LINT_VERSION" "sigs.k8s.io/kube-api-linter@$KUBE_API_LINTER_VERSION" \
    && run golangci-lint go mod tidy \
    && run golangci-lint go build -trimpath -ldflags "-s -w" -o "$BIN/golangci-lint" sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter)
}

build_govulncheck() { run govulncheck go install -trimpath -ldflags "-s -w" "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"; }

# govulncheck is not in the default set: only `make vulncheck` uses it (it needs vuln.go.dev).
all=(etcd kwok helm kind controller-gen helm-docs ct golangci-lint kube kube-node coredns pause kube-oldest)
# Named sets, so each make target builds only what it runs (the Makefile names them):
#   node     the binaries scripts/kind-node.sh puts in the kind node image (v1.36 server and node
#            binaries, etcd, CoreDNS, pause)
#   up       make up on kind: the node set, kind and helm
#   up-kwok  make up's kwok fallback: kwok, the v1.36 server binaries, etcd, helm
#   all      every tool above (make tools, make test and its suites)
set_node=(kube kube-node etcd coredns pause)
set_up=(kind helm "${set_node[@]}")
set_up_kwok=(kwok kube etcd helm)
want=()
for a in "$@"; do
  case $a in
    node) want+=("${set_node[@]}") ;;
    up) want+=("${set_up[@]}") ;;
    up-kwok) want+=("${set_up_kwok[@]}") ;;
    all) want+=("${all[@]}") ;;
    *) want+=("$a") ;;
  esac
done
[ ${#want[@]} -gt 0 ] || want=("${all[@]}")
t_all=$SECONDS
for t in "${want[@]}"; do
  case $t in
    kube) step kube "$KUBE_VERSION" kube-apiserver kube-controller-manager kube-scheduler -- build_kube ;;
    kube-oldest-node) step kube-oldest-node "$KUBE_OLDEST_VERSION" kube-oldest/kubelet kube-oldest/kubeadm kube-oldest/kubectl kube-oldest/kube-proxy kube-oldest/kube-controller-manager kube-oldest/kube-scheduler -- build_kube_oldest_node ;;
    kube-oldest) step kube-oldest "$KUBE_OLDEST_VERSION" kube-oldest/kube-apiserver -- build_kube_oldest ;;
    kube-node) step kube-node "$KUBE_VERSION" kubelet kubeadm kubectl kube-proxy -- build_kube_node ;;
    coredns) step coredns "$COREDNS_VERSION" coredns -- build_coredns ;;
    pause) step pause "$(sha256sum "$ROOT/scripts/files/pause/main.go" | cut -c1-12)" pause -- build_pause ;;
    etcd) step etcd "$ETCD_VERSION" etcd -- build_etcd ;;
    kwok) step kwok "$KWOK_VERSION" kwok kwokctl -- build_kwok ;;
    helm) step helm "$HELM_VERSION" helm -- build_helm ;;
    kind) step kind "$KIND_VERSION" kind -- build_kind ;;
    controller-gen) step controller-gen "$CONTROLLER_GEN_VERSION" controller-gen -- build_controller_gen ;;
    helm-docs) step helm-docs "$HELM_DOCS_VERSION" helm-docs -- build_helm_docs ;;
    ct) step ct "$CT_VERSION" ct -- build_ct ;;
    govulncheck) step govulncheck "$GOVULNCHECK_VERSION" govulncheck -- build_govulncheck ;;
    golangci-lint) step golangci-lint "$GOLANGCI_LINT_VERSION+$KUBE_API_LINTER_VERSION" golangci-lint -- build_golangci_lint ;;
    *) log "unknown tool '$t' (known: ${all[*]} govulncheck; sets: node up up-kwok all)"; exit 2 ;;
  esac
done
log "all tools ready in $BIN ($((SECONDS - t_all))s)"
