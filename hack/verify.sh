#!/usr/bin/env bash
# Fails when formatting, vet, go.mod/go.sum, generated files or scripts are off. Runs every check
# and reports each, rather than stopping at the first. Changes nothing in the tree: each check
# says what to run to fix what it found, and the last one fails if any check wrote to the tree.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set +e
cd "${KRUISE_ROOT}" || exit 1
rc=0
check() {
  local name="$1"; shift
  if "$@"; then log "verify: ${name} ok"; else log "verify: ${name} FAILED"; rc=1; fi
}
# The check functions below are only called through check(), which shellcheck does not follow.
# shellcheck disable=SC2317
gofmt_clean() {
  local out
  out=$(gofmt -l cmd pkg hack test bench 2>&1)
  [[ -z "${out}" ]] || { echo "gofmt would change (run gofmt -w on them):"; echo "${out}"; return 1; }
}
# go mod tidy -diff prints what tidy would change, and fails, without writing go.mod or go.sum.
# Run in the repository's module and in each nested tool module (NESTED_MODULES).
# shellcheck disable=SC2317
go_mod_tidy() {
  local out dir ok=0
  for dir in . "${NESTED_MODULES[@]}"; do
    out=$(cd "${dir}" && go mod tidy -diff 2>&1) && continue
    echo "${dir}/go.mod, go.sum are not tidy: run 'go mod tidy' in ${dir} and commit the result. It would change:"
    echo "${out}" | head -60
    ok=1
  done
  return "${ok}"
}
# go vet of the nested tool modules, which `go vet ./...` does not enter. With the flags their build
# uses (hack/build-certmanager.sh), so that vet reuses the packages the build compiled instead of
# compiling cert-manager and its Kubernetes libraries once more (minutes on a cold machine).
# shellcheck disable=SC2317
nested_vet() {
  local dir ok=0
  for dir in "${NESTED_MODULES[@]}"; do
    (cd "${dir}" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go vet -trimpath ./...) || ok=1
  done
  return "${ok}"
}
# shellcheck disable=SC2317
scripts_parse() {
  local f ok=0
  for f in "${SCRIPTS[@]}"; do bash -n "${f}" || { echo "syntax error in ${f}"; ok=1; }; done
  return "${ok}"
}
# Settings in .shellcheckrc: a sourced file (lib.sh) is found next to the script that sources it.
# shellcheck disable=SC2317
scripts_lint() {
  if ! command -v shellcheck >/dev/null; then
    echo "shellcheck is not installed: run hack/install-deps.sh (make deps) as root"
    return 1
  fi
  shellcheck "${SCRIPTS[@]}"
}
# deploy/base is rendered from the Helm chart (hack/update-deploy.sh): it must not drift.
# shellcheck disable=SC2317
rendered_base() {
  local tmp
  tmp=$(mktemp -d) || return 1
  bash hack/update-deploy.sh "${tmp}/base" "${tmp}/local" 2>/dev/null || { rm -rf "${tmp}"; return 1; }
  local out
  out=$(diff -r --exclude=crds "${tmp}/base" deploy/base; diff "${tmp}/local/deletion-protection.yaml" deploy/overlays/local/deletion-protection.yaml; diff "${tmp}/local/resourcedistribution.yaml" deploy/overlays/local/resourcedistribution.yaml)
  rm -rf "${tmp}"
  [[ -z "${out}" ]] || { echo "deploy/base or deploy/overlays/local/{deletion-protection,resourcedistribution}.yaml differs from the chart (run hack/update-deploy.sh):"; echo "${out}" | head -40; return 1; }
}
# What git sees of the tree: the changes to tracked files and the untracked files.
tree_state() {
  { git status --porcelain=v1 --untracked-files=all; git diff HEAD; } 2>/dev/null | sha256sum
}
# shellcheck disable=SC2317
tree_untouched() {
  [[ "$(tree_state)" == "${before}" ]] || { echo "a check changed the tree (git status):"; git status --short; return 1; }
}

SCRIPTS=(hack/*.sh .ci/run)
# Tools with a go.mod of their own (their dependencies must not move the repository's).
NESTED_MODULES=(hack/tools/certmanager hack/tools/localpv)
before=$(tree_state)
check gofmt gofmt_clean
check "go vet" go vet ./...
check "go vet (e2e)" go vet -tags e2e ./test/e2e/...
check "go vet (bench)" go vet -tags bench ./bench/...
check "go vet (dashboard)" go vet -tags dashboard ./test/dashboard/
check "go vet (nested modules)" nested_vet
check "go mod tidy" go_mod_tidy
check "generated code" bash hack/verify-codegen.sh
check "script syntax" scripts_parse
check "shellcheck" scripts_lint
check "deploy/base rendered from the chart" rendered_base
check "tree untouched by verify" tree_untouched
exit "${rc}"
