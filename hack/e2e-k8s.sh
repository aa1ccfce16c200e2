#!/usr/bin/env bash
# `make e2e-k8s`: the install-dependent e2e tests on other Kubernetes releases. For each release in
# K8S_VERSIONS (default: the tested ones but the default release) it brings the local cluster up at
# that release, installs kruise with Helm, runs the tests E2E_K8S_RUN selects with the kubectl of
# that release, and keeps the log and the kruise components' container logs in
# _output/e2e-k8s/<release>/; then it brings the cluster back to the default release with kruise
# deployed (kustomize), and prints one line per release. Not part of `make test` or CI: each
# release is a cluster of its own, about ten minutes each.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

run="${E2E_K8S_RUN:?E2E_K8S_RUN (a go test -run pattern) must be set: run make e2e-k8s}"
default="${K8S_DEFAULT_VERSION}"
versions=()
for v in ${K8S_VERSIONS:-${K8S_TESTED_VERSIONS}}; do
  v="$(k8s_resolve_version "${v}")"
  [[ -n "${K8S_VERSIONS:-}" || "${v}" != "${default}" ]] && versions+=("${v}")
done
((${#versions[@]} > 0)) || die "no Kubernetes release to test"
out="${KRUISE_ROOT}/_output/e2e-k8s"
pod_logs="${KRUISE_WORK}/kubelet/pod-logs"

# Every release's binaries first: a build failure stops the run before the cluster changes.
for v in "${versions[@]}" "${default}"; do K8S_VERSION="${v}" bash "${KRUISE_ROOT}/hack/build-k8s.sh"; done

restore() {
  log "bringing the local cluster back to Kubernetes ${default}"
  bash "${KRUISE_ROOT}/hack/cluster.sh" down
  K8S_VERSION="${default}" bash "${KRUISE_ROOT}/hack/cluster.sh" up
  K8S_VERSION="${default}" bash "${KRUISE_ROOT}/hack/deploy.sh"
}
trap restore EXIT

# error_summary DIR: the error lines of the kruise components' logs kept in DIR, the five most
# frequent messages first (a hot error loop shows as one message repeated many times).
error_summary() {
  local f
  for f in "$1"/*.log; do
    [[ -f "${f}" ]] || continue
    # CRI log lines ("<time> stderr F <line>") of klog text ("E1129 13:42:01.123456 1 file.go:12] msg k=v").
    sed -E 's/^[^ ]+ (stdout|stderr) [FP] //' "${f}" | grep -E '^E[0-9]{4} ' | sed -E 's/^[^]]*\] //; s/ [a-zA-Z]+=.*$//' |
      sort | uniq -c | sort -rn | head -5 |
      sed "s|^|  $(basename "${f}" .log): |"
  done
}

results=()
for v in "${versions[@]}"; do
  dir="${out}/${v}"
  rm -rf "${dir}" && mkdir -p "${dir}"
  log "=== Kubernetes ${v} ==="
  bash "${KRUISE_ROOT}/hack/cluster.sh" down
  K8S_VERSION="${v}" bash "${KRUISE_ROOT}/hack/cluster.sh" up
  K8S_VERSION="${v}" KRUISE_INSTALL=helm bash "${KRUISE_ROOT}/hack/deploy.sh"
  rc=0
  (cd "${KRUISE_ROOT}" && KUBECONFIG="${KRUISE_WORK}/admin.kubeconfig" KRUISE_HELM="${HELM_BIN}/helm" \
    KRUISE_KUBECTL="${KRUISE_CACHE}/k8s/${v}/bin/kubectl" \
    go test -tags e2e -count=1 -v -timeout "${E2E_TIMEOUT:-30m}" -run "${run}" ./test/e2e/) \
    >"${dir}/e2e.log" 2>&1 || rc=$?
  # The components' container logs, restarts included, before the next release's `down` removes them.
  for f in "${pod_logs}"/kruise-system_*/*/*.log; do
    [[ -f "${f}" ]] || continue
    c="$(basename "$(dirname "$(dirname "${f}")")")"
    cp "${f}" "${dir}/${c#kruise-system_}-$(basename "$(dirname "${f}")")-$(basename "${f}")"
  done
  pass=$(grep -cE '^--- PASS' "${dir}/e2e.log" || true)
  fail=$(grep -cE '^--- FAIL' "${dir}/e2e.log" || true)
  skip=$(grep -cE '^--- SKIP' "${dir}/e2e.log" || true)
  results+=("${v}: ${pass} passed, ${fail} failed, ${skip} skipped (go test exit ${rc}; ${dir})")
  # The tests not passed, each with the file:line messages go test -v printed just before it.
  awk '/^(=== |--- PASS)/ {buf = ""; next}
    /^    [a-z_]+\.go:[0-9]+:/ {buf = buf "\n" $0; next}
    /^--- (FAIL|SKIP)/ {print $0 buf; buf = ""}' "${dir}/e2e.log" >"${dir}/not-passed.txt" || true
  error_summary "${dir}" >"${dir}/errors.txt" || true
  log "Kubernetes ${v}: ${pass} passed, ${fail} failed, ${skip} skipped"
done

trap - EXIT
(restore) || log "could not bring the local cluster back to Kubernetes ${default}: run make down && make run"

echo
echo "e2e on other Kubernetes releases (tests: ${run})"
for i in "${!versions[@]}"; do
  echo "${results[${i}]}"
  d="${out}/${versions[${i}]}"
  if [[ -s "${d}/not-passed.txt" ]]; then sed 's/^/    /' "${d}/not-passed.txt"; fi
  if [[ -s "${d}/errors.txt" ]]; then echo "  most frequent error log lines:"; cat "${d}/errors.txt"; fi
done
