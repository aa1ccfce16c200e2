#!/usr/bin/env bash
# Builds kruise-rollout, OpenKruise's Rollout controller (github.com/openkruise/rollouts, the main
# package at the module's root), from the Go module proxy into the cache, keyed by the release and
# the Go version, copies its CRDs (config/crd/bases of the same module) next to it, and prints the
# binary's path. Idempotent: a cached binary is reused, and CRDs missing from the cache are copied.
# The build happens in a throwaway module that requires the release (nothing is copied into this
# repository); v0.6.1 is the newest release the proxy serves (v0.7.0 is not tagged as a module) and
# builds with its own go.mod's Kubernetes v0.26 libraries. See docs/rollouts.md.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

module=github.com/openkruise/rollouts
version="${KRUISE_ROLLOUTS_VERSION:-v0.6.1}"
dir="${KRUISE_CACHE}/rollouts/${version}/$(go version | sha256sum | cut -c1-16)"
bin="${dir}/kruise-rollout"

if [[ -x "${bin}" ]]; then
  log "kruise-rollout ${version}: cached"
else
  start=${SECONDS}
  work=$(mktemp -d)
  trap 'rm -rf "${work}"' EXIT
  mkdir -p "${dir}"
  log "kruise-rollout ${version}: building (a few minutes on first run)"
  # The throwaway module takes the release's go.mod as it is (it has no replace directives), so
  # the build uses exactly the dependency versions the release was tested with.
  printf 'module kruise.local/rollouts\n\ngo 1.19\n' >"${work}/go.mod"
  (cd "${work}" && export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 &&
    go get "${module}@${version}" &&
    go build -trimpath -ldflags "-s -w" -o "${bin}.tmp" "${module}") || die "kruise-rollout ${version} did not build"
  mv "${bin}.tmp" "${bin}"
  log "kruise-rollout ${version}: built in $((SECONDS - start))s"
fi

if ! compgen -G "${dir}/crds/*.yaml" >/dev/null; then
  moddir=$(cd / && GOFLAGS='' go mod download -json "${module}@${version}" | sed -n 's#^[[:space:]]*"Dir": "\(.*\)",$#\1#p')
  [[ -n "${moddir}" && -d "${moddir}/config/crd/bases" ]] || die "no config/crd/bases in ${module}@${version} (${moddir:-not downloaded})"
  mkdir -p "${dir}/crds.tmp"
  cp "${moddir}"/config/crd/bases/*.yaml "${dir}/crds.tmp/" || die "cannot copy kruise-rollout's CRDs from ${moddir}/config/crd/bases"
  chmod u+w "${dir}"/crds.tmp/*.yaml
  rm -rf "${dir}/crds" && mv "${dir}/crds.tmp" "${dir}/crds"
  log "kruise-rollout ${version}: CRDs copied ($(find "${dir}/crds" -name "*.yaml" | wc -l) files)"
fi
echo "${bin}"
