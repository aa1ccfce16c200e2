#!/usr/bin/env bash
# Fails when formatting, vet, generated files or script syntax are off. Runs every check and
# reports each, rather than stopping at the first.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set +e
cd "${KRUISE_ROOT}"
rc=0
check() {
  local name="$1"; shift
  if "$@"; then log "verify: ${name} ok"; else log "verify: ${name} FAILED"; rc=1; fi
}
gofmt_clean() {
  local out
  out=$(gofmt -l cmd pkg hack test 2>&1)
  [[ -z "${out}" ]] || { echo "gofmt would change:"; echo "${out}"; return 1; }
}
go_mod_tidy() {
  local before
  before=$(cat go.mod go.sum)
  go mod tidy || return 1
  [[ "$(cat go.mod go.sum)" == "${before}" ]] || { echo "go.mod/go.sum were not tidy (now fixed: commit them)"; return 1; }
}
scripts_parse() {
  local f ok=0
  for f in hack/*.sh .ci/run; do bash -n "${f}" || { echo "syntax error in ${f}"; ok=1; }; done
  return "${ok}"
}
# deploy/base is rendered from the Helm chart (hack/update-deploy.sh): the two must not drift.
rendered_base() {
  local tmp
  tmp=$(mktemp -d) || return 1
  bash hack/update-deploy.sh "${tmp}" 2>/dev/null || { rm -rf "${tmp}"; return 1; }
  local out
  out=$(diff -r --exclude=crds "${tmp}" deploy/base)
  rm -rf "${tmp}"
  [[ -z "${out}" ]] || { echo "deploy/base differs from the chart (run hack/update-deploy.sh):"; echo "${out}" | head -40; return 1; }
}
check gofmt gofmt_clean
check "go vet" go vet ./...
check "go vet (e2e)" go vet -tags e2e ./test/e2e/...
check "go vet (bench)" go vet -tags bench ./bench/...
check "go mod tidy" go_mod_tidy
check "generated code" bash hack/verify-codegen.sh
check "script syntax" scripts_parse
check "deploy/base rendered from the chart" rendered_base
exit "${rc}"
