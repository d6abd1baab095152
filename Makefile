# platform-operators: every developer and CI entry point. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ROOT    := $(abspath .)
BIN     := $(ROOT)/bin
# Exported: the scripts and the Go test harness (testbed.Bin) use the same bin/ as make, also when
# it is given on the command line (make test BIN=/elsewhere/bin).
export BIN
CHART   := charts/platform-operators
# One version for the chart (version, appVersion), the image tag and `manager --version`: the VERSION
# file. `make verify` fails when Chart.yaml or CHANGELOG.md disagree with it (docs/release.md).
VERSION ?= $(shell cat $(ROOT)/VERSION)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/platform-operators/platform-operators/controller/version.Version=$(VERSION) \
           -X github.com/platform-operators/platform-operators/controller/version.Commit=$(COMMIT)
IMAGE   ?= platform-operators/manager:dev
# envtest finds kube-apiserver and etcd here (built by scripts/tools.sh).
export KUBEBUILDER_ASSETS := $(BIN)
# envtest's own default gives kube-apiserver and etcd 20 s to start: under `make test`'s lanes on 2
# cores (kind nodes, builds, niced tests) a start took longer and failed tests that had nothing wrong.
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT ?= 2m
export KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT ?= 1m
# ct calls helm (and yamllint) from PATH: the pinned helm in bin/ comes first.
export PATH := $(BIN):$(PATH)
E2E_PROVIDER ?= kwok
# Host parts (Debian packages, the Docker engine) the real-node test bed needs: scripts/host.sh.
HOST    := scripts/host.sh
# gcc and libc6-dev: `go test -race` needs cgo, and Go turns cgo off on a machine without a C compiler.
RACE_PACKAGES := gcc libc6-dev
HOST_PACKAGES := $(RACE_PACKAGES) docker.io debootstrap containerd docker-registry
# Three Go modules: the product (this directory's go.mod: the manager and its packages, nothing else),
# the tests and their tooling (tests/go.mod: the test bed, e2e, chart tests, bench, chaos, image
# builder, with Helm, kind, e2e-framework, Prometheus, gonum/plot...), and the release tooling
# (tests/release/go.mod: the signing libraries). Each target that builds, runs, tests or lints one of
# the two test modules runs inside it (`cd`), so `go test ./...` here is the product's packages only.
GO_PACKAGES := ./controller/...
TESTS_MODULE := tests
# The tests module's packages make test-go runs with -race (relative to tests/).
TESTS_PACKAGES := ./docs/... ./testbed/... ./bench/... ./imagebuild/... ./chaos/... ./metricsfilter/...
RELEASE_MODULE := tests/release
# Chart render tests (in the tests module) run without -race: they render with the Helm library and
# share no state across goroutines of ours, and under the race detector they take over 10 minutes here.
CHART_TEST_PACKAGES := ./chart/...

##@ Main jobs

# UP_PROVIDER: kind (real nodes; the manager runs in the cluster from the project's image) where
# the machine can run containers, else kwok (fake nodes; the manager as a local process).
UP_PROVIDER ?= $(shell [ "$$(id -u)" = 0 ] || docker info >/dev/null 2>&1 && echo kind || echo kwok)

# `make up` builds only the tools it runs (scripts/tools.sh's sets `up` and `up-kwok`); the test tools
# (kwok on kind, kube-oldest, golangci-lint, controller-gen, helm-docs, ct) wait for `make test`.
.PHONY: up
up: ## Local cluster with the chart installed and the manager running in it from the project's image (kind; kwok where containers cannot run).
ifeq ($(UP_PROVIDER),kind)
	scripts/tools.sh up
	$(MAKE) --no-print-directory kind-node
	cd $(TESTS_MODULE) && go run ./testbed/cmd/testbed up --provider kind --root $(ROOT) --values $(ROOT)/scripts/dev-values.yaml
else
	@echo "==> no container engine can run here (not root, no Docker): falling back to kwok (fake nodes, the manager as a local process)"
	scripts/tools.sh up-kwok
	$(MAKE) --no-print-directory manager
	cd $(TESTS_MODULE) && go run ./testbed/cmd/testbed up --provider kwok --root $(ROOT) --values $(ROOT)/scripts/dev-values.yaml
endif

.PHONY: down
down: ## Delete the local cluster, stop its registry/manager (.cluster/ is removed) and the Docker engine `make up` started.
	cd $(TESTS_MODULE) && go run ./testbed/cmd/testbed down --root $(ROOT)
	$(HOST) docker-down

# make test's suites in lanes (scripts/test-lanes.sh): the suites of a lane run one after another,
# the lanes at the same time, so the suites that mostly wait (real minute slots, cluster starts,
# helm --wait) overlap with those that compute. Lanes are separated by |; one lane runs everything in
# series (TEST_LANES='verify-static test-go ... test-release'). Logs: $(TEST_LOGS)/<suite>.log, a
# failed suite's printed at the end. Measured in docs/development.md.
TEST_LANES ?= verify-static test-go test-chart test-oldest-kube test-image|test-e2e-kind|test-e2e test-e2e-namespaced test-ct test-release
TEST_LOGS  ?= $(BIN)/test-logs
# Suites that only compute, run niced beside those that keep time (scripts/test-lanes.sh).
TEST_NICE  ?= verify-static test-go test-chart test-oldest-kube test-image

.PHONY: test
test: tools host-packages ## Everything CI runs: verify, unit + envtest, chart checks, the image test, e2e on kwok (cluster and namespaced scope) and on kind, ct install, the release round trip.
	@# with-docker starts an engine if none answers and stops it (by pid) when the tests end, pass or fail.
	$(HOST) with-docker $(MAKE) --no-print-directory test-lanes

.PHONY: test-lanes
test-lanes: manifests kind-node manager-linux ## make test without its host setup: generate, build what several suites share, then the suites in TEST_LANES.
	@# manifests first and alone: it rewrites files that the other suites compile and install.
	NICE_SUITES='$(TEST_NICE)' scripts/test-lanes.sh $(TEST_LOGS) '$(TEST_LANES)'

##@ Test bed

.PHONY: host-packages
host-packages: ## Install the Debian packages the tests need (yamllint, Docker engine, debootstrap, containerd, registry) that are missing.
	$(HOST) packages $(HOST_PACKAGES)

.PHONY: host
host: host-packages ## host-packages, then start Docker if no engine answers (stopped by make down), fetch busybox.
	$(HOST) docker-up
	$(HOST) busybox

.PHONY: kind-node
kind-node: host ## Build the kind node image offline (cached by content: seconds when built).
	scripts/tools.sh node
	scripts/kind-node.sh

##@ Tests

.PHONY: test-go
test-go: tools ## Unit tests and envtest integration tests (real kube-apiserver + etcd from bin/) with the race detector, then the chart render tests.
	@# -race needs cgo and a C compiler: installed from Debian's packages if missing (a fresh machine has none).
	$(HOST) packages $(RACE_PACKAGES)
	CGO_ENABLED=1 go test -race -count=1 -timeout 40m $(GO_PACKAGES)
	cd $(TESTS_MODULE) && CGO_ENABLED=1 go test -race -count=1 -timeout 20m $(TESTS_PACKAGES)
	cd $(RELEASE_MODULE) && CGO_ENABLED=1 go test -race -count=1 -timeout 20m ./...
	cd $(TESTS_MODULE) && go test -count=1 -timeout 20m $(CHART_TEST_PACKAGES)

# What differs between the Kubernetes minors Chart.yaml declares: the CRDs with their CEL rules, the
# chart's admission policies, FlowSchemas and Pod Security labels, applied to and exercised on the oldest
# declared minor's kube-apiserver (KUBE_OLDEST_VERSION in scripts/versions.env; envtest) as test-go does
# on KUBE_VERSION's.
OLDEST_KUBE := KUBEBUILDER_ASSETS=$(BIN)/kube-oldest go test -count=1 -timeout 20m

.PHONY: test-oldest-kube
test-oldest-kube: tools ## The CRDs, CEL rules, admission policies and FlowSchemas on an envtest kube-apiserver of the oldest declared Kubernetes minor (KUBE_OLDEST_VERSION).
	$(BIN)/kube-oldest/kube-apiserver --version
	$(OLDEST_KUBE) -run '^TestAdmission$$' ./controller/api/v1alpha1/
	cd $(TESTS_MODULE) && $(OLDEST_KUBE) -run '^(TestChartOnARealAPIServer|TestAdmissionPoliciesInNamespacedScope|TestAllowedSourceNamespaces)$$' ./chart/

# The branch a changed chart's version must be above (ct.yaml's target-branch), as `<remote>/<branch>`:
# origin/main in a clone (CI's, or yours); in a worktree with no remote, the local main
# (`refs/heads/main`, which ct reads as remote `refs/heads`). docs/development.md "Chart version check".
CT_TARGET_BRANCH ?= main
CT_REMOTE ?= $(shell git rev-parse -q --verify origin/$(CT_TARGET_BRANCH) >/dev/null && echo origin || { git rev-parse -q --verify refs/heads/$(CT_TARGET_BRANCH) >/dev/null && echo refs/heads; })

.PHONY: test-chart
test-chart: tools host-packages ## helm lint --strict (every ci/ values file), ct lint (every chart, then the version check of changed ones), yamllint.
	for f in $(CHART)/ci/*-values.yaml; do $(BIN)/helm lint --strict $(CHART) -f $$f; done
	@# ct turns check-version-increment off for charts named with --charts: this run lints every chart.
	$(BIN)/ct lint --config ct.yaml --charts $(CHART) --validate-maintainers=false --validate-chart-schema=false
	@# This one lints the charts changed since the merge base with $(CT_REMOTE)/$(CT_TARGET_BRANCH), with
	@# check-version-increment (ct.yaml): a changed chart needs a higher version. None changed: nothing to check.
	@test -n "$(CT_REMOTE)" || { echo "test-chart: neither origin/$(CT_TARGET_BRANCH) nor $(CT_TARGET_BRANCH) exists: cannot check the chart version (fetch it, or set CT_REMOTE/CT_TARGET_BRANCH)"; exit 1; }
	$(BIN)/ct lint --config ct.yaml --remote $(CT_REMOTE) --target-branch $(CT_TARGET_BRANCH) --validate-maintainers=false --validate-chart-schema=false
	yamllint -c .yamllint.yaml .

.PHONY: test-e2e
test-e2e: tools ## End-to-end suite through the chart on kwok (fake nodes; the manager as a local process).
	cd $(TESTS_MODULE) && E2E_PROVIDER=$(E2E_PROVIDER) go test -count=1 -timeout 30m -v ./e2e/

.PHONY: test-e2e-kind
test-e2e-kind: tools kind-node ## The e2e suite on kind (real nodes, 1 control plane + 2 workers): in-cluster manager pulled from a registry with credentials, real Jobs.
	cd $(TESTS_MODULE) && E2E_PROVIDER=kind go test -count=1 -timeout 40m -v ./e2e/

.PHONY: kind-node-oldest
kind-node-oldest: tools host ## The kind node image of the oldest declared Kubernetes minor (KUBE_OLDEST_VERSION; its node binaries built first, ~10 min cold).
	scripts/tools.sh kube-oldest-node
	KIND_NODE_KUBE=oldest scripts/kind-node.sh

.PHONY: test-e2e-kind-oldest
test-e2e-kind-oldest: kind-node-oldest ## The e2e suite on kind nodes of the oldest declared Kubernetes minor (KUBE_OLDEST_VERSION). Not in `make test`: a second kind run, measured in docs/development.md.
	cd $(TESTS_MODULE) && E2E_PROVIDER=kind KIND_NODE_IMAGE=$$(cat $(BIN)/kind-node-oldest/node-image) go test -count=1 -timeout 40m -v ./e2e/

.PHONY: test-ct
test-ct: tools kind-node ## chart-testing `ct install` (install, helm test, uninstall per ci/ values file) and an upgrade from the previous chart on a kind cluster.
	cd $(TESTS_MODULE) && go run ./testbed/cmd/testbed ct --root $(ROOT) --upgrade-from $(CHART_UPGRADE_FROM)

.PHONY: test-image
test-image: host ## Run the built manager and job images in Docker (time zones, read-only root, nonroot).
	cd $(TESTS_MODULE) && PO_DOCKER_TESTS=1 PO_BUSYBOX_BINARY=$(BIN)/busybox/busybox go test -count=1 -timeout 20m -v -run Docker ./imagebuild/

.PHONY: test-release
test-release: tools kind-node manager-linux cli-dist ## Release round trip: `make release` pushes and signs (throwaway cosign key; throwaway OpenPGP key for the chart's Helm .prov) to a local registry with credentials, the kubectl-platform archives included; the signatures and the signed provenance and SBOM attestations verified with the public key, the chart with helm pull --verify, and verification fails on a tampered image and chart; helm pull oci://, helm upgrade -i on kind with the chart and the image by digest.
	cd $(RELEASE_MODULE) && PO_RELEASE_TEST=1 go test -count=1 -timeout 20m -v -run TestReleaseRoundTrip .

.PHONY: test-e2e-namespaced
test-e2e-namespaced: tools ## The e2e suite with rbac.scope=namespaced, SecretSync on (copies into the listed namespaces, the pull secret; the SecretSync tests that target namespaces they create skip). In `make test` (third lane): a second suite run, ~2 min.
	cd $(TESTS_MODULE) && E2E_PROVIDER=$(E2E_PROVIDER) E2E_RBAC_SCOPE=namespaced go test -count=1 -timeout 30m -v ./e2e/

# CHAOS_FLAGS: e.g. -scenarios=leader-kill-slot,upgrade (a subset; -list names them), -keep (keep the cluster for a rerun).
CHAOS_FLAGS ?=

.PHONY: chaos
chaos: tools kind-node ## Fault harness on a kind cluster (2 in-cluster replicas; leader kill/freeze, API server/etcd restarts, 429/stall proxy, upgrade, a CPU-starved node) with invariants; writes its table into docs/reliability.md. Not in `make test`: ~35 min.
	cd $(TESTS_MODULE) && go run ./chaos -root $(ROOT) $(CHAOS_FLAGS)

# MODEL_WALKS, MODEL_STEPS: how many seeded walks `make model` runs, of how many steps each.
MODEL_WALKS ?= 2000
MODEL_STEPS ?= 120

.PHONY: model
model: ## The ScheduledJob slot protocol's model-based test (controller/scheduledjob/model_test.go) over MODEL_WALKS seeded walks: each violated invariant is printed with a seed that replays it (SCHEDULEDJOB_MODEL_SEED=<n>). Not in `make test`.
	SCHEDULEDJOB_MODEL_WALKS=$(MODEL_WALKS) SCHEDULEDJOB_MODEL_STEPS=$(MODEL_STEPS) go test -count=1 -timeout 180m -run '^TestModel$$' ./controller/scheduledjob/

.PHONY: fresh-machine
FRESH_TARGETS ?=
fresh-machine: host ## README's two commands (or FRESH_TARGETS) in a Debian bookworm container with only Go, make and git, on a clone of HEAD; each timed. Not in `make test`.
	scripts/fresh-machine.sh $(FRESH_TARGETS)

.PHONY: bench
bench: tools ## Benchmarks: bytes the cache keeps per object (Go benchmark), write requests and bytes per copy (envtest), then a kwok cluster (manager vs a bare-client floor), written to docs/benchmarks.md and docs/img/.
	go test -run '^$$' -bench CachedBytes -benchtime 3x ./controller/secretsync/
	COPY_WRITE_COST=1 go test -count=1 -run '^TestCopyWriteCost$$' -v ./controller/secretsync/
	cd $(TESTS_MODULE) && go run ./bench

##@ Build and generate

# The release `make test-ct` upgrades from (that revision's chart with the manager image built from
# that revision): the last commit before the manager pods got their component label (the Deployment
# selector is immutable, so that upgrade path is tested).
CHART_UPGRADE_FROM ?= 9745751

.PHONY: tools
tools: ## Build every pinned tool into bin/ (cold ~15 min, then seconds); `make up` builds only its own (scripts/tools.sh up).
	scripts/tools.sh

.PHONY: manager
manager: ## Build the manager binary into bin/manager.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/manager ./controller/cmd/manager

# Controller packages with +kubebuilder:rbac markers, named as in --controllers (a test checks the list).
RBAC_CONTROLLERS := at scheduledjob secretsync podwatcher

.PHONY: manifests
manifests: ## Generate deepcopy, CRDs and the manager ClusterRole (from kubebuilder markers) into the chart, and the per-controller roles the RBAC self-check embeds.
	@# The two tools it needs, built if missing (seconds when they are): `make verify` works on a fresh clone.
	@scripts/tools.sh controller-gen helm-docs
	$(BIN)/controller-gen object paths=./controller/api/...
	$(BIN)/controller-gen rbac:roleName=manager-role crd:generateEmbeddedObjectMeta=true paths=./controller/... \
		output:rbac:artifacts:config=$(CHART)/files/rbac output:crd:artifacts:config=$(CHART)/files/crds
	@# The RBAC self-check embeds one role per controller package (controller/permissions/roles/<controller>/) and one
	@# of the manager's own markers (roles/manager/): what it checks is what the markers grant, controller by controller.
	rm -rf controller/permissions/roles
	for c in $(RBAC_CONTROLLERS); do \
		$(BIN)/controller-gen rbac:roleName=$$c paths=./controller/$$c/... output:rbac:artifacts:config=controller/permissions/roles/$$c || exit 1; \
	done
	$(BIN)/controller-gen rbac:roleName=manager paths=./controller/cmd/manager output:rbac:artifacts:config=controller/permissions/roles/manager
	@# The chart grants the rules of the enabled controllers only: it reads the same per-controller roles from files/rbac/controllers/.
	rm -rf $(CHART)/files/rbac/controllers && mkdir -p $(CHART)/files/rbac/controllers
	for c in $(RBAC_CONTROLLERS) manager; do cp controller/permissions/roles/$$c/role.yaml $(CHART)/files/rbac/controllers/$$c.yaml || exit 1; done
	$(BIN)/helm-docs --chart-search-root charts --template-files README.md.gotmpl >/dev/null

.PHONY: verify
verify: manifests verify-static ## Fail if generated files drift, code is not gofmt/vet/golangci-lint clean, or the version sources disagree with VERSION.

.PHONY: verify-static
verify-static: lint ## verify without regenerating first (make test runs manifests before its lanes start).
	cd $(RELEASE_MODULE) && go test -count=1 -run 'TestVersionSourcesAgree' .
	@test -z "$$(gofmt -l controller tests)" || { echo "gofmt needed:"; gofmt -l controller tests; exit 1; }
	go vet ./...
	cd $(TESTS_MODULE) && go vet ./...
	cd $(RELEASE_MODULE) && go vet ./...
	@# Each module's go.mod and go.sum tidy: the product's lists only what its packages (the manager and
	@# their tests) import, not the tooling's.
	@for m in . $(TESTS_MODULE) $(RELEASE_MODULE); do (cd $$m && go mod tidy -diff) || { echo "go.mod/go.sum of $$m not tidy: run 'go mod tidy' in it"; exit 1; }; done
	@git diff --exit-code -- controller $(CHART) || { echo "generated files are out of date: run 'make manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- controller $(CHART))" || { echo "untracked generated files:"; git status --porcelain -- controller $(CHART); exit 1; }

.PHONY: lint
lint: ## golangci-lint (bin/golangci-lint: v2.15.0 with the Kube API Linter built in) with .golangci.yml: the linters, the layering rules (depguard) and the API conventions of the CRD types.
	@scripts/tools.sh golangci-lint
	@# --allow-serial-runners: another golangci-lint on the machine (a shared CI runner, a second
	@# checkout) is waited for; without it this one exits with "parallel golangci-lint is running".
	$(BIN)/golangci-lint run --allow-serial-runners ./...
	cd $(TESTS_MODULE) && $(BIN)/golangci-lint run --allow-serial-runners --config $(ROOT)/.golangci.yml ./...
	cd $(RELEASE_MODULE) && $(BIN)/golangci-lint run --allow-serial-runners --config $(ROOT)/.golangci.yml ./...

# The Go vulnerability database govulncheck reads: vuln.go.dev, or a copy of it (file:///path, a mirror).
VULNDB ?= https://vuln.go.dev

.PHONY: vulncheck
vulncheck: ## govulncheck (GOVULNCHECK_VERSION) of the product module: the known vulnerabilities the manager's code reaches. Needs vuln.go.dev (or VULNDB=file:///copy); not in verify: unreachable on the project's machines.
	@scripts/tools.sh govulncheck
	$(BIN)/govulncheck -db $(VULNDB) ./...

.PHONY: image
image: ## Build the container image with Docker (for Docker users; not possible on the kwok test bed).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

# Images without Docker (tests/imagebuild, go-containerregistry): the manager on an empty base,
# nonroot 65532, as a linux/amd64 + linux/arm64 index; the job image from Debian's static busybox.
REGISTRY  ?=
TAG       ?= $(VERSION)
INSECURE  ?= 0
IMAGE_TAR ?= $(BIN)/manager-image.tar
ARCHES    := amd64 arm64
# The job test image's tag: the busybox Debian bookworm ships (scripts/host.sh busybox).
JOB_IMAGE_TAG := 1.35
PUSH_FLAGS = --push $(if $(filter 1 true yes,$(INSECURE)),--insecure)

.PHONY: manager-linux
manager-linux: ## Build the static linux manager binaries the image holds (bin/manager-linux-{amd64,arm64}).
	@# Built beside and renamed over: suites running at the same time (make test's lanes) each build
	@# them, and one reading a binary must never see it half written.
	for arch in $(ARCHES); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/manager-linux-$$arch.$$$$ ./controller/cmd/manager && \
		mv -f $(BIN)/manager-linux-$$arch.$$$$ $(BIN)/manager-linux-$$arch || exit 1; \
	done

# kubectl-platform, the workstation command (docs/cli.md): static binaries for the platforms a
# release ships it for (tests/release.CLIPlatforms), stamped like the manager.
CLI_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: cli
cli: ## Build kubectl-platform for this machine into bin/kubectl-platform (on PATH: `kubectl platform ...`).
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-platform ./controller/cmd/kubectl-platform

.PHONY: cli-dist
cli-dist: ## Build kubectl-platform for linux and darwin on amd64 and arm64 (bin/kubectl-platform-<os>-<arch>), as make release ships them.
	@# Built beside and renamed over, as manager-linux.
	for p in $(CLI_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-platform-$$os-$$arch.$$$$ ./controller/cmd/kubectl-platform && \
		mv -f $(BIN)/kubectl-platform-$$os-$$arch.$$$$ $(BIN)/kubectl-platform-$$os-$$arch || exit 1; \
	done

.PHONY: image-tar
image-tar: manager-linux ## Assemble the image without Docker into $(IMAGE_TAR), tagged $(IMAGE) (this machine's platform; docker load / kind load image-archive).
	cd $(TESTS_MODULE) && go run ./imagebuild/cmd/imagebuild manager $(foreach a,$(ARCHES),--binary $(BIN)/manager-linux-$(a)) \
		--version $(VERSION) --revision $(COMMIT) --tag $(IMAGE) --tar $(IMAGE_TAR)

.PHONY: image-push
image-push: manager-linux ## Push the manager image index (amd64 + arm64) to $(REGISTRY)/manager:$(TAG), e.g. REGISTRY=harbor.example.com/platform (INSECURE=1: plain HTTP).
	@test -n "$(REGISTRY)" || { echo "set REGISTRY, e.g. make image-push REGISTRY=harbor.example.com/platform"; exit 1; }
	cd $(TESTS_MODULE) && go run ./imagebuild/cmd/imagebuild manager $(foreach a,$(ARCHES),--binary $(BIN)/manager-linux-$(a)) \
		--version $(VERSION) --revision $(COMMIT) --tag $(REGISTRY)/manager:$(TAG) $(PUSH_FLAGS)

.PHONY: job-image-push
job-image-push: ## Push the job test image (Debian's static busybox, /bin/sh) to $(REGISTRY)/busybox:$(JOB_IMAGE_TAG).
	@test -n "$(REGISTRY)" || { echo "set REGISTRY, e.g. make job-image-push REGISTRY=harbor.example.com/platform"; exit 1; }
	$(HOST) busybox
	cd $(TESTS_MODULE) && go run ./imagebuild/cmd/imagebuild busybox --binary $(BIN)/busybox/busybox --tag $(REGISTRY)/busybox:$(JOB_IMAGE_TAG) $(PUSH_FLAGS)

# make release: dry run by default (everything into bin/release/, nothing pushed); PUSH=1 REGISTRY=...
# publishes the image index, its SBOM and provenance referrers, and the chart, and signs them with the cosign
# key COSIGN_KEY (its password in COSIGN_PASSWORD; the release command reads both from the environment),
# and gives the chart Helm's provenance (.prov) signed with the OpenPGP key HELM_SIGN_KEY of the secret
# keyring HELM_SIGN_KEYRING (passphrase HELM_SIGN_PASSPHRASE; also read from the environment)
# (docs/release.md).
PUSH ?= 0
RELEASE_FLAGS = --root $(ROOT) --commit $(shell git rev-parse HEAD) --out $(BIN)/release $(if $(REGISTRY),--registry $(REGISTRY)) \
	$(if $(filter 1 true yes,$(PUSH)),--push) $(if $(filter 1 true yes,$(INSECURE)),--plain-http)

.PHONY: release
release: manager-linux cli-dist ## Build a release of VERSION (image index, chart, kubectl-platform archives and checksums, SBOM, provenance) into bin/release/; PUSH=1 REGISTRY=host/project publishes it and signs it with COSIGN_KEY (password: COSIGN_PASSWORD) and the chart's .prov with HELM_SIGN_KEY of HELM_SIGN_KEYRING (passphrase: HELM_SIGN_PASSPHRASE) (INSECURE=1: plain HTTP).
	@git diff --quiet HEAD || { echo "the work tree has uncommitted changes: a release is built from a commit"; $(if $(filter 1 true yes,$(PUSH)),exit 1,true); }
	cd $(RELEASE_MODULE) && go run ./cmd/release $(RELEASE_FLAGS)

.PHONY: clean
clean: down ## Remove built tools and binaries (bin/).
	rm -rf $(BIN)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)
