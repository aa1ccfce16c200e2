#!/usr/bin/env bash
# Fails when formatting, vet or generated files are off.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${KRUISE_ROOT}"
rc=0
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^vendor/') 2>&1)
if [[ -n "${unformatted}" ]]; then
  log "gofmt would change:"; echo "${unformatted}"; rc=1
fi
go vet ./... || rc=1
go vet -tags e2e ./test/e2e/... || rc=1
bash hack/verify-codegen.sh || rc=1
for f in hack/*.sh .ci/run; do bash -n "${f}" || { log "syntax error in ${f}"; rc=1; }; done
((rc == 0)) && log "verify: all good"
exit "${rc}"
