#!/usr/bin/env bash
# Checks that the generated code and CRDs are up to date: regenerates them in a
# temporary copy of the tree and fails, naming the stale files, if anything
# differs. Does not modify the working tree.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GENERATED=(pkg/apis pkg/client deploy/base/crds deploy/charts/kruise/crds)

tmp="$(mktemp -d "${TMPDIR:-/tmp}/kruise-verify-codegen.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

cd "${KRUISE_ROOT}"
cp go.mod go.sum "${tmp}/"
mkdir -p "${tmp}/hack"
cp hack/lib.sh hack/update-codegen.sh hack/boilerplate.go.txt "${tmp}/hack/"
for d in "${GENERATED[@]}"; do
  mkdir -p "${tmp}/$(dirname "${d}")"
  if [[ -d "${d}" ]]; then cp -a "${d}" "${tmp}/${d}"; fi
done

log "regenerating into ${tmp}"
bash "${tmp}/hack/update-codegen.sh"

stale=0
for d in "${GENERATED[@]}"; do
  if ! diff -ruN "${d}" "${tmp}/${d}" >"${tmp}/diff.txt" 2>&1; then
    stale=1
    log "stale generated files under ${d}:"
    grep -E '^diff ' "${tmp}/diff.txt" | awk '{print "  " $NF}' | sed "s|${tmp}/||" >&2
    head -n 60 "${tmp}/diff.txt" >&2
  fi
done
if ((stale)); then
  die "generated code is out of date: run hack/update-codegen.sh and commit the result"
fi
log "generated code is up to date"
