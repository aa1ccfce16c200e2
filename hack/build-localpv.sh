#!/usr/bin/env bash
# Builds localpv (hack/tools/localpv: the local cluster's dynamic provisioner of node-local
# directories, on the SIG Storage provisioner library) into the cache, keyed by a hash of the
# tool's sources and the Go version, and prints the binary's path. Idempotent: a cached binary is
# reused. The tool is a module of its own: the library requires newer Kubernetes libraries than
# kruise builds with.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

src="${KRUISE_ROOT}/hack/tools/localpv"
dir="${KRUISE_CACHE}/localpv/$(tool_module_key "${src}")"
bin="${dir}/localpv"
build_tool_module localpv "${src}" "${dir}" "${bin}"
echo "${bin}"
