#!/usr/bin/env bash
# Shared settings for the hack/ scripts. Source it; do not run it.
# The settings below are read by the scripts that source this file, which shellcheck cannot see.
# shellcheck disable=SC2034
set -euo pipefail

KRUISE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="/usr/local/go/bin:${PATH}"

# CACHE survives `make down` and fresh clones (binaries, images); WORK is one cluster's state.
KRUISE_CACHE="${KRUISE_CACHE:-${HOME}/.cache/kruise}"
# Socket paths must stay under 108 bytes, so keep WORK short.
KRUISE_WORK="${KRUISE_WORK:-/var/tmp/kruise-local}"

# Versions of what the local cluster runs. Built binaries are cached by version.
# K8S_VERSION picks the Kubernetes release (docs/development.md, "Other Kubernetes versions"):
# a full version (v1.30.14), or a minor alone (1.30) for its patch in K8S_TESTED_VERSIONS. Unset,
# it is the version the running local cluster was brought up with (hack/cluster.sh records it),
# so that every script acts on the binaries the cluster runs; with no cluster, the default.
K8S_DEFAULT_VERSION="v1.34.10"
# The releases `make e2e-k8s` runs by default, one per tested minor.
K8S_TESTED_VERSIONS="v1.30.14 v1.32.13 v1.34.10"
K8S_VERSION_FILE="${KRUISE_WORK}/k8s-version"

# k8s_resolve_version V: V as a full release, or an error for what is not one.
k8s_resolve_version() {
  local v="v${1#v}" t
  if [[ "${v}" =~ ^v1\.[0-9]+$ ]]; then
    for t in ${K8S_TESTED_VERSIONS}; do
      if [[ "${t}" == "${v}".* ]]; then echo "${t}"; return 0; fi
    done
    echo "no tested patch release of Kubernetes ${v} (K8S_TESTED_VERSIONS: ${K8S_TESTED_VERSIONS}): give a full version such as ${v}.0" >&2
    return 1
  fi
  if [[ ! "${v}" =~ ^v1\.[0-9]+\.[0-9]+$ ]]; then
    echo "K8S_VERSION=${1}: want a Kubernetes release such as v1.30.14 or a minor such as 1.30" >&2
    return 1
  fi
  echo "${v}"
}

# k8s_minor V: the minor number of release V (30 for v1.30.14).
k8s_minor() { local m="${1#v1.}"; echo "${m%%.*}"; }

if [[ -z "${K8S_VERSION:-}" && -s "${K8S_VERSION_FILE}" ]]; then
  K8S_VERSION="$(cat "${K8S_VERSION_FILE}")"
fi
K8S_VERSION="$(k8s_resolve_version "${K8S_VERSION:-${K8S_DEFAULT_VERSION}}")"
K8S_MINOR="$(k8s_minor "${K8S_VERSION}")"
# The staging modules (k8s.io/api, client-go, ...) of release v1.N.P are published as v0.N.P.
K8S_LIB_VERSION="${K8S_LIB_VERSION:-v0.${K8S_VERSION#v1.}}"
# What generates and renders the tree (code-generator, helm template's --kube-version) follows the
# default release, never the running cluster's.
K8S_CODEGEN_VERSION="v0.${K8S_DEFAULT_VERSION#v1.}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.4}"
CRICTL_VERSION="${CRICTL_VERSION:-v1.34.0}"

K8S_BIN="${KRUISE_CACHE}/k8s/${K8S_VERSION}/bin"
ETCD_BIN="${KRUISE_CACHE}/etcd/${ETCD_VERSION}/bin"
TOOLS_BIN="${KRUISE_CACHE}/tools/bin"
CTR_SOCK="${KRUISE_WORK}/containerd/containerd.sock"
# The recording CRI proxy in front of containerd (hack/tools/criproxy); kruise-daemon uses it.
CRIPROXY_SOCK="${KRUISE_WORK}/criproxy.sock"
OUT_BIN="${KRUISE_ROOT}/_output/bin"

# The loopback test registry: repositories under public/ are anonymous, basic/ need HTTP Basic
# auth, token/ need a Bearer token from the registry's /token endpoint (same user and password).
REGISTRY_ADDR="${REGISTRY_ADDR:-127.0.0.1:5000}"
REGISTRY_USER="${REGISTRY_USER:-kruise}"
REGISTRY_BASIC_PASSWORD="${REGISTRY_BASIC_PASSWORD:-kruise-basic-pw}"
REGISTRY_TOKEN_PASSWORD="${REGISTRY_TOKEN_PASSWORD:-kruise-token-pw}"
PAUSE_IMAGE="${REGISTRY_ADDR}/public/pause:3.10"
BUSYBOX_TAG="1.35"
CRICTL_BIN="${KRUISE_CACHE}/cri-tools/${CRICTL_VERSION}/bin"
HELM_VERSION="${HELM_VERSION:-v3.19.0}"
HELM_BIN="${KRUISE_CACHE}/helm/${HELM_VERSION}/bin"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# wait_for DESC TIMEOUT_SECONDS CMD...: poll CMD until it succeeds or the deadline passes.
wait_for() {
  local desc="$1" timeout="$2"; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${timeout}s waiting for ${desc}"
      return 1
    fi
    sleep 0.5
  done
}

# build_tool_module NAME SRC DIR BIN: builds the Go module of its own at SRC (a tool whose
# dependencies differ from kruise's) into BIN unless DIR already holds it. The caller keys DIR by
# tool_module_key, so a changed source or Go version builds anew.
build_tool_module() {
  local name=$1 src=$2 dir=$3 bin=$4 start=${SECONDS}
  if [[ -x "${bin}" ]]; then
    log "${name}: cached"
    return
  fi
  mkdir -p "${dir}"
  log "${name}: building (a few minutes on first run)"
  # -mod=readonly: the tool's go.sum pins what it builds, verify.sh checks it is tidy.
  (cd "${src}" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags "-s -w" \
    -o "${bin}.tmp" .) || die "${name} did not build"
  mv "${bin}.tmp" "${bin}"
  log "${name}: built in $((SECONDS - start))s"
}

# tool_module_key SRC: a short hash of a tool module's sources and the Go version.
tool_module_key() {
  { go version; cat "$1"/go.mod "$1"/go.sum "$1"/*.go; } | sha256sum | cut -c1-16
}

