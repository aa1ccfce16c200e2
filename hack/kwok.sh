#!/usr/bin/env bash
# Builds kwok (sigs.k8s.io/kwok, the Kubernetes node and pod-lifecycle simulator) from the Go module
# proxy into the version-keyed cache and prints the binary's path. Idempotent: a cached binary is
# reused. hack/cluster.sh runs it as the kubelet of the local cluster's simulated nodes, the
# CloneSet scale benchmark (bench/cloneset_scale_test.go) against its own control plane; kwok is
# not a dependency of our module.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
KWOK_BIN="${KRUISE_CACHE}/kwok/${KWOK_VERSION}/bin"

if [[ ! -x "${KWOK_BIN}/kwok" ]]; then
  mkdir -p "${KWOK_BIN}"
  log "kwok ${KWOK_VERSION}: building"
  # `go install pkg@version` builds in module mode outside any module: kwok's go.mod has no
  # replace directives, so its own go.sum pins every dependency. Into a temporary name first, so
  # that no half-written binary is cached.
  (cd "${KWOK_BIN}" && CGO_ENABLED=0 GOBIN="${KWOK_BIN}/.tmp" GOFLAGS=-mod=mod go install -trimpath \
    -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}") || die "kwok ${KWOK_VERSION} did not build"
  mv "${KWOK_BIN}/.tmp/kwok" "${KWOK_BIN}/kwok" && rmdir "${KWOK_BIN}/.tmp"
  log "kwok ${KWOK_VERSION}: built"
fi
echo "${KWOK_BIN}/kwok"
