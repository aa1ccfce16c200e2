#!/usr/bin/env bash
# Builds Kubernetes and etcd binaries from the Go module proxy into the version-keyed cache.
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces staging modules with local
# paths), so we build inside a small wrapper module that points those at published versions.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

# lib_version DIR MODULE (DIR outside any Go module): K8S_LIB_VERSION when the module proxy serves MODULE at it, else the
# served patch release of the same minor nearest below it (else above). The proxy does not serve
# every staging module at every patch (v1.32.13's k8s.io/endpointslice v0.32.13, for one); a
# staging module's patch releases of one minor differ by backported fixes only.
lib_version() {
  local dir="$1" m="$2" want="${K8S_LIB_VERSION}" v best="" above=""
  if (cd "${dir}" && GOFLAGS=-mod=mod go mod download "${m}@${want}" >/dev/null 2>&1); then
    echo "${want}"
    return
  fi
  local prefix="${want%.*}." patch="${want##*.}"
  for v in $(cd "${dir}" && GOFLAGS=-mod=mod go list -m -versions "${m}" 2>/dev/null | cut -d' ' -f2-); do
    [[ "${v}" == "${prefix}"* && "${v#"${prefix}"}" =~ ^[0-9]+$ ]] || continue
    if ((${v#"${prefix}"} < patch)); then best="${v}"; elif [[ -z "${above}" ]]; then above="${v}"; fi
  done
  best="${best:-${above}}"
  [[ -n "${best}" ]] || die "the module proxy serves no ${prefix}x release of ${m}"
  log "kubernetes ${K8S_VERSION}: ${m} ${want} is not served; using ${best}"
  echo "${best}"
}

build_k8s() {
  local missing=0
  for c in "${K8S_CMDS[@]}"; do [[ -x "${K8S_BIN}/${c}" ]] || missing=1; done
  if ((missing == 0)); then log "kubernetes ${K8S_VERSION}: cached in ${K8S_BIN}"; return; fi

  local mod="${KRUISE_CACHE}/k8s/${K8S_VERSION}/wrapper"
  mkdir -p "${mod}" "${K8S_BIN}"
  log "kubernetes ${K8S_VERSION}: preparing wrapper module in ${mod}"
  local gomod
  gomod=$(cd "$(dirname "${mod}")" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [[ -f "${gomod}" ]] || die "could not download k8s.io/kubernetes@${K8S_VERSION}"

  {
    echo "module kruise.local/k8sbuild"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes ${K8S_VERSION}"
    echo
    echo "replace ("
    # Every staging module that upstream replaces with ./staging/... gets the published version.
    sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "${gomod}" | while read -r m; do
      case "${m}" in
        k8s.io/sample-apiserver|k8s.io/sample-cli-plugin|k8s.io/sample-controller)
          # Not served by the proxy and needed by no command: stub them.
          local stub="${mod}/stubs/${m#k8s.io/}"
          mkdir -p "${stub}"
          printf 'module %s\n\ngo 1.24\n' "${m}" >"${stub}/go.mod"
          echo "	${m} => ./stubs/${m#k8s.io/}"
          ;;
        *) echo "	${m} => ${m} $(lib_version "$(dirname "${mod}")" "${m}")" ;;
      esac
    done
    echo ")"
  } >"${mod}/go.mod"
  cat >"${mod}/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubectl/pkg/cmd"
)
GO
  (cd "${mod}" && { GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true; })
  (cd "${mod}" && GOFLAGS=-mod=mod go mod download)

  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X ${p}.gitVersion=${K8S_VERSION} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor}"
    ld+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
  done
  # One go build for all the commands: their shared packages compile once, with both cores busy
  # until the last link, into a directory of its own so that no half-written binary is cached.
  local pkgs=() c
  for c in "${K8S_CMDS[@]}"; do [[ -x "${K8S_BIN}/${c}" ]] || pkgs+=("k8s.io/kubernetes/cmd/${c}"); done
  log "kubernetes ${K8S_VERSION}: building ${pkgs[*]##*/}"
  rm -rf "${K8S_BIN}/.tmp" && mkdir -p "${K8S_BIN}/.tmp"
  (cd "${mod}" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w ${ld}" \
    -o "${K8S_BIN}/.tmp/" "${pkgs[@]}") || die "kubernetes ${K8S_VERSION} did not build"
  for c in "${pkgs[@]##*/}"; do mv "${K8S_BIN}/.tmp/${c}" "${K8S_BIN}/${c}"; done
  rmdir "${K8S_BIN}/.tmp"
  log "kubernetes ${K8S_VERSION}: built"
}

build_etcd() {
  if [[ -x "${ETCD_BIN}/etcd" ]]; then log "etcd ${ETCD_VERSION}: cached in ${ETCD_BIN}"; return; fi
  local mod="${KRUISE_CACHE}/etcd/${ETCD_VERSION}/wrapper"
  mkdir -p "${mod}" "${ETCD_BIN}"
  cat >"${mod}/go.mod" <<GOMOD
module kruise.local/etcdbuild

go 1.24.0

require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
GOMOD
  cat >"${mod}/main.go" <<'GO'
// Command etcd runs the etcd server from the published server module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  log "etcd ${ETCD_VERSION}: building"
  (cd "${mod}" && GOFLAGS=-mod=mod go mod tidy && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w" -o "${ETCD_BIN}/etcd.tmp" .) && mv "${ETCD_BIN}/etcd.tmp" "${ETCD_BIN}/etcd"
}

build_crictl() {
  local bin="${KRUISE_CACHE}/cri-tools/${CRICTL_VERSION}/bin"
  if [[ -x "${bin}/crictl" ]]; then log "crictl ${CRICTL_VERSION}: cached"; return; fi
  mkdir -p "${bin}"
  # Only this cri-tools version's checksum resolves here; it vendors its dependencies.
  local dir
  dir=$(cd "${bin}" && GONOSUMDB=sigs.k8s.io/cri-tools GOFLAGS=-mod=mod go mod download -json \
    "sigs.k8s.io/cri-tools@${CRICTL_VERSION}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d "${dir}" ]] || die "could not download sigs.k8s.io/cri-tools@${CRICTL_VERSION}"
  log "crictl ${CRICTL_VERSION}: building"
  # Its vendor/modules.txt does not satisfy newer Go toolchains: build a writable copy from the
  # module proxy instead of the vendor directory.
  local src="${KRUISE_CACHE}/cri-tools/${CRICTL_VERSION}/src"
  rm -rf "${src}" && cp -r "${dir}" "${src}" && chmod -R u+w "${src}" && rm -rf "${src}/vendor"
  (cd "${src}" && GONOSUMDB=sigs.k8s.io/cri-tools CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-s -w" -o "${bin}/crictl.tmp" ./cmd/crictl) && mv "${bin}/crictl.tmp" "${bin}/crictl"
}

# Helm renders and lints deploy/charts/kruise in the tests and installs it in the e2e phase.
build_helm() {
  if [[ -x "${HELM_BIN}/helm" ]]; then log "helm ${HELM_VERSION}: cached"; return; fi
  mkdir -p "${HELM_BIN}"
  log "helm ${HELM_VERSION}: building"
  (cd "${HELM_BIN}" && CGO_ENABLED=0 GOBIN="${HELM_BIN}" GOFLAGS=-mod=mod go install -trimpath \
    -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}")
  [[ -x "${HELM_BIN}/helm" ]] || die "helm ${HELM_VERSION} did not build"
}

# The four builds share nothing but the caches (safe for concurrent use): run them side by side,
# so that one's downloads and links overlap the others' compiles.
pids=()
for b in build_k8s build_etcd build_crictl build_helm; do
  "${b}" &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "${p}" || failed=1; done
((failed == 0)) || die "a build failed (see above)"
