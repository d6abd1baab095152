# platform-operators: every developer and CI entry point. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ROOT    := $(abspath .)
BIN     := $(ROOT)/bin
CHART   := charts/platform-operators
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/platform-operators/platform-operators/controller/version.Version=$(VERSION) \
           -X github.com/platform-operators/platform-operators/controller/version.Commit=$(COMMIT)
IMAGE   ?= platform-operators/manager:dev
# envtest finds kube-apiserver and etcd here (built by scripts/tools.sh).
export KUBEBUILDER_ASSETS := $(BIN)
# ct calls helm (and yamllint) from PATH: the pinned helm in bin/ comes first.
export PATH := $(BIN):$(PATH)
E2E_PROVIDER ?= kwok
GO_PACKAGES := ./controller/... ./tests/chart/... ./tests/testbed/... ./tests/bench/... ./tests/imagebuild/...

##@ Main jobs

.PHONY: up
up: tools manager ## Start a local kwok cluster, install the chart, run the manager as its ServiceAccount (.cluster/kubeconfig).
	go run ./tests/testbed/cmd/testbed up --root $(ROOT) --values scripts/dev-values.yaml

.PHONY: down
down: ## Stop the manager and delete the local cluster (.cluster/ is removed).
	go run ./tests/testbed/cmd/testbed down --root $(ROOT)

.PHONY: test
test: tools verify test-go test-chart test-e2e ## Everything CI runs: generated-file check, unit + envtest, chart checks, kwok e2e.

##@ Tests

.PHONY: test-go
test-go: tools ## Unit tests, envtest integration tests (real kube-apiserver + etcd from bin/) and chart render tests.
	go test -count=1 $(GO_PACKAGES)

.PHONY: test-chart
test-chart: tools ## helm lint --strict (every ci/ values file), ct lint, yamllint.
	for f in $(CHART)/ci/*-values.yaml; do $(BIN)/helm lint --strict $(CHART) -f $$f; done
	$(BIN)/ct lint --config ct.yaml --charts $(CHART) --validate-maintainers=false --validate-chart-schema=false
	yamllint -c .yamllint.yaml .

.PHONY: test-e2e
test-e2e: tools ## End-to-end suite through the chart (E2E_PROVIDER=kwok here; kind needs Docker).
	E2E_PROVIDER=$(E2E_PROVIDER) go test -count=1 -timeout 30m -v ./tests/e2e/

.PHONY: test-e2e-namespaced
test-e2e-namespaced: tools ## The e2e suite with rbac.scope=namespaced (SecretSync tests skip: cluster-scoped by design). Not in `make test`: a second suite run, ~2 min.
	E2E_PROVIDER=$(E2E_PROVIDER) E2E_RBAC_SCOPE=namespaced go test -count=1 -timeout 30m -v ./tests/e2e/

.PHONY: bench
bench: tools ## Benchmarks on a kwok cluster (manager vs a bare-client floor); writes docs/benchmarks.md and docs/img/.
	go run ./tests/bench

##@ Build and generate

.PHONY: tools
tools: ## Build the pinned tools into bin/ (cold ~15 min, then seconds).
	scripts/tools.sh

.PHONY: manager
manager: ## Build the manager binary into bin/manager.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/manager ./controller/cmd/manager

.PHONY: manifests
manifests: ## Generate deepcopy, CRDs and the manager ClusterRole (from kubebuilder markers) into the chart.
	$(BIN)/controller-gen object paths=./controller/api/...
	$(BIN)/controller-gen rbac:roleName=manager-role crd:generateEmbeddedObjectMeta=true paths=./controller/... \
		output:rbac:artifacts:config=$(CHART)/files/rbac output:crd:artifacts:config=$(CHART)/files/crds
	$(BIN)/helm-docs --chart-search-root charts --template-files README.md.gotmpl >/dev/null

.PHONY: verify
verify: manifests ## Fail if generated files drift, or code is not gofmt/vet clean.
	@test -z "$$(gofmt -l controller tests)" || { echo "gofmt needed:"; gofmt -l controller tests; exit 1; }
	go vet ./...
	@git diff --exit-code -- controller $(CHART) || { echo "generated files are out of date: run 'make manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- controller $(CHART))" || { echo "untracked generated files:"; git status --porcelain -- controller $(CHART); exit 1; }

.PHONY: image
image: ## Build the container image with Docker (for Docker users; not possible on the kwok test bed).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

# Image without Docker: a static linux/amd64 manager on an empty base (tests/imagebuild), nonroot 65532.
REGISTRY  ?=
IMAGE_TAR ?= $(BIN)/manager-image.tar

.PHONY: manager-linux
manager-linux: ## Build the static linux/amd64 manager binary the image holds (bin/manager-linux-amd64).
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/manager-linux-amd64 ./controller/cmd/manager

.PHONY: image-tar
image-tar: manager-linux ## Assemble the image without Docker into $(IMAGE_TAR), tagged $(IMAGE) (docker load / kind load image-archive).
	go run ./tests/imagebuild/cmd/imagebuild --binary $(BIN)/manager-linux-amd64 --version $(VERSION) --revision $(COMMIT) \
		--tag $(IMAGE) --tar $(IMAGE_TAR)

.PHONY: image-push
image-push: manager-linux ## Assemble the image without Docker and push it to $(REGISTRY)/manager:$(VERSION) (e.g. REGISTRY=harbor.example.com/platform).
	@test -n "$(REGISTRY)" || { echo "set REGISTRY, e.g. make image-push REGISTRY=harbor.example.com/platform"; exit 1; }
	go run ./tests/imagebuild/cmd/imagebuild --binary $(BIN)/manager-linux-amd64 --version $(VERSION) --revision $(COMMIT) \
		--tag $(REGISTRY)/manager:$(VERSION) --push

.PHONY: clean
clean: down ## Remove built tools and binaries (bin/).
	rm -rf $(BIN)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)
