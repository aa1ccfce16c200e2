#!/usr/bin/env bash
# Builds localpv (hack/tools/localpv: the local cluster's dynamic provisioner of node-local
# directories, on the SIG Storage provisioner library) into the cache, keyed by a hash of the
# tool's sources and the Go version, and prints the binary's path. Idempotent: a cached binary is
# reused. The tool is a module of its own: the library requires newer Kubernetes libraries than
# kruise builds with.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

src="${KRUISE_ROOT}/hack/tools/localpv"
key=$( { go version; cat "${src}"/go.mod "${src}"/go.sum "${src}"/*.go; } | sha256sum | cut -c1-16)
dir="${KRUISE_CACHE}/localpv/${key}"
bin="${dir}/localpv"
if [[ -x "${bin}" ]]; then
  log "localpv: cached"
else
  mkdir -p "${dir}"
  log "localpv: building (a minute or two on first run)"
  start=${SECONDS}
  # -mod=readonly: the tool's go.sum pins what it builds, verify.sh checks it is tidy.
  (cd "${src}" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags "-s -w" \
    -o "${bin}.tmp" .) || die "localpv did not build"
  mv "${bin}.tmp" "${bin}"
  log "localpv: built in $((SECONDS - start))s"
fi
echo "${bin}"
