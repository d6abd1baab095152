# syntax=docker/dockerfile:1
# The manager image: a static binary on distroless, running as nonroot (65532), as the chart expects
# (command /manager, runAsUser/runAsGroup 65532, read-only root filesystem).
#
#   make image                                   # docker build with VERSION/COMMIT from git
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse --short HEAD) .
#
# Needs BuildKit (the default builder since Docker 23) for the cache mounts. The build context is
# an allowlist (see .dockerignore): go.mod, go.sum and controller/ only.

# The builder runs on the build host's platform and cross-compiles for the target (CGO is off),
# so multi-platform builds need no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build

ARG VERSION=v0.0.0-dev
ARG COMMIT=unknown
# Set by buildx/BuildKit from --platform; empty with the classic builder, which means the host's.
ARG TARGETOS
ARG TARGETARCH

# Keep the module cache at the path the cache mounts use (the golang image's default is /go/pkg/mod).
ENV GOMODCACHE=/root/go/pkg/mod \
    GOCACHE=/root/.cache/go-build \
    CGO_ENABLED=0

WORKDIR /src

# Dependencies first, so editing the code does not invalidate this layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go mod download

COPY controller/ controller/
RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath \
      -ldflags "-s -w -X github.com/platform-operators/platform-operators/controller/version.Version=${VERSION} -X github.com/platform-operators/platform-operators/controller/version.Commit=${COMMIT}" \
      -o /out/manager ./controller/cmd/manager

FROM gcr.io/distroless/static-debian12:nonroot

ARG VERSION=v0.0.0-dev
ARG COMMIT=unknown

LABEL org.opencontainers.image.source="https://github.com/platform-operators/platform-operators" \
      org.opencontainers.image.title="platform-operators" \
      org.opencontainers.image.description="Platform add-on manager for shared (multi-tenant) Kubernetes clusters" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"

COPY --from=build /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
