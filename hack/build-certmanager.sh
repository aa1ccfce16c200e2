#!/usr/bin/env bash
# Builds cert-manager-lite (hack/tools/certmanager: cert-manager's certificate controllers, SelfSigned
# and CA issuers and cainjector, from the cert-manager module on the Go module proxy) into the cache,
# keyed by a hash of the tool's sources and the Go version, copies cert-manager's CRDs
# (deploy/crds of the same module) next to it, and prints the binary's path. Idempotent: a cached
# binary is reused, and CRDs missing from the cache are copied. cert-manager's own commands
# (cmd/controller, cmd/cainjector) are separate modules that the proxy does not serve; see
# docs/operations.md.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

src="${KRUISE_ROOT}/hack/tools/certmanager"
version=$(sed -n 's#^[[:space:]]*github.com/cert-manager/cert-manager \(v[^ ]*\).*#\1#p' "${src}/go.mod" | head -1)
[[ -n "${version}" ]] || die "no github.com/cert-manager/cert-manager requirement in ${src}/go.mod"
dir="${KRUISE_CACHE}/cert-manager/${version}/$(tool_module_key "${src}")"
bin="${dir}/cert-manager-lite"
build_tool_module "cert-manager-lite ${version}" "${src}" "${dir}" "${bin}"
# The CRDs come from the module's source in the module cache, which `go list -m` reports only once
# the module is downloaded (an empty Dir on a machine that never had it): download it first.
if ! compgen -G "${dir}/crds/*.yaml" >/dev/null; then
  moddir=$(cd "${src}" && GOFLAGS="-mod=readonly -buildvcs=false" go mod download github.com/cert-manager/cert-manager &&
    GOFLAGS="-mod=readonly -buildvcs=false" go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager) ||
    die "cannot download the cert-manager module"
  [[ -n "${moddir}" && -d "${moddir}/deploy/crds" ]] || die "no deploy/crds in the cert-manager module (${moddir:-not in the module cache})"
  mkdir -p "${dir}/crds.tmp"
  cp "${moddir}"/deploy/crds/*.yaml "${dir}/crds.tmp/" || die "cannot copy cert-manager's CRDs from ${moddir}/deploy/crds"
  chmod u+w "${dir}"/crds.tmp/*.yaml
  rm -rf "${dir}/crds" && mv "${dir}/crds.tmp" "${dir}/crds"
  log "cert-manager-lite ${version}: CRDs copied ($(find "${dir}/crds" -name "*.yaml" | wc -l) files)"
fi
echo "${bin}"
