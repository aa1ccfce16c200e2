#!/usr/bin/env bash
# Builds the kubectl-kruise plugin into _output/bin and installs it next to the local cluster's
# kubectl, so that with that directory on PATH (hack/next-steps.sh prints the line) `kubectl kruise`
# works. Run by `make run`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cd "${KRUISE_ROOT}"
ld="$(go run ./hack/tools/buildinfo)"
CGO_ENABLED=0 go build -trimpath -tags grpcnotrace -ldflags "-s -w ${ld}" -o "${OUT_BIN}/" ./cmd/kubectl-kruise
mkdir -p "${K8S_BIN}"
install -m 0755 "${OUT_BIN}/kubectl-kruise" "${K8S_BIN}/kubectl-kruise"
log "kubectl-kruise: installed as ${K8S_BIN}/kubectl-kruise (kubectl kruise)"
