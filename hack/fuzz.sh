#!/usr/bin/env bash
# Runs every Go native fuzz target in the repository for FUZZTIME each (default 30s), one target
# per `go test -fuzz` invocation (Go fuzzes one target at a time). `go test` alone runs only the
# seed corpora; this is the long run. A crasher is written to the package's testdata/fuzz and
# fails the run: commit it as a regression seed with the fix.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${KRUISE_ROOT}"
fuzztime="${FUZZTIME:-30s}"
rc=0
while IFS=: read -r file name; do
  pkg="./$(dirname "${file}")"
  log "fuzz: ${pkg} ${name} (${fuzztime})"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "${fuzztime}" -fuzzminimizetime 10s "${pkg}"; then
    log "fuzz: ${name} FAILED"
    rc=1
  fi
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' pkg cmd hack | sed 's/:func /:/' | sort)
exit "${rc}"
