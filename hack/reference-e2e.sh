#!/usr/bin/env bash
# Runs OpenKruise v1.9.0's own e2e suite against the kruise deployed on the local cluster, with the
# reference's CI settings, and prints what each case's result means (`make reference-e2e`,
# docs/migration.md "OpenKruise's own e2e suite against kruise"):
#
#   1. builds the suite from the Go module proxy (hack/tools/refsuite, cached in ~/.cache/kruise);
#   2. pushes stand-in images to the loopback registry for the images the suite pulls: the
#      Kubernetes e2e images (KUBE_TEST_REPO_LIST points their registry here) and the docker.io
#      names some cases use, served through a containerd mirror for docker.io that exists only
#      during the run;
#   3. sets the reference CI's feature gates on kruise-controller and kruise-daemon for the run
#      and puts the previous arguments back afterwards;
#   4. runs the cases REF_FOCUS (and not REF_SKIP) selects, with a Ginkgo JSON report, and
#      classifies every case against test/reference/known.yaml.
#
# REF_KWOK_NODES=N adds N simulated nodes (kwok, hack/cluster.sh) for the run only, untainted,
# named kwok-ref-<i> so that they sort before the real node: the WorkloadSpread cases label the
# first three workers by name as zones and need more than two. Their pods are Running and Ready
# without containers, so give them only to cases that never look inside one (no exec, logs or
# HTTP): `make reference-e2e REF_FOCUS=WorkloadSpread REF_KWOK_NODES=3`.
#
# Environment: REF_FOCUS (required, a Ginkgo --focus regexp), REF_SKIP, REF_FILES (a Ginkgo
# --focus-file filter, e.g. v1beta1/cloneset.go: the reference has v1alpha1 and v1beta1 copies of
# most specs), REF_TIMEOUT (default 60m, the reference CI's), REF_OUT (default
# _output/reference-e2e/<focus>[_<files>]).
# The whole script is one compound command, which bash reads before it runs any of it: editing the
# file during a long run cannot change what the run does.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export KUBECONFIG="${KRUISE_WORK}/admin.kubeconfig" KUBECACHEDIR="${KRUISE_WORK}/kube-cache"
kubectl() { "${K8S_BIN}/kubectl" "$@"; }

focus="${REF_FOCUS:-}"
if [[ -z "${focus}" ]]; then
  cat >&2 <<'EOF'
REF_FOCUS is required: a Ginkgo --focus regexp over the reference's spec names. Per kind (what the
reference's CI jobs focus on):
  make reference-e2e REF_FOCUS=CloneSet
  make reference-e2e REF_FOCUS=StatefulSet
  make reference-e2e REF_FOCUS=DaemonSet
  make reference-e2e REF_FOCUS=SidecarSet
  make reference-e2e REF_FOCUS=ContainerRecreateRequest
  make reference-e2e REF_FOCUS='PullImage|PullImages'
  make reference-e2e REF_FOCUS=WorkloadSpread REF_KWOK_NODES=3
EOF
  exit 2
fi
skip="${REF_SKIP:-}"
files="${REF_FILES:-}"
timeout="${REF_TIMEOUT:-60m}"
kwok_nodes="${REF_KWOK_NODES:-0}"
[[ "${kwok_nodes}" =~ ^[0-9]+$ ]] || die "REF_KWOK_NODES must be a number of nodes, not '${kwok_nodes}'"
# The simulated nodes' label (hack/cluster.sh KWOK_NODE_LABEL); this value marks the run's.
kwok_label="kwok.x-k8s.io/node"
kwok_value="reference-e2e"
out="${REF_OUT:-${KRUISE_ROOT}/_output/reference-e2e/$(tr -c 'A-Za-z0-9\n' '_' <<<"${focus}${files:+_${files}}")}"
mkdir -p "${out}" "${OUT_BIN}"

# 1. The suite, built once per version into the cache.
(cd "${KRUISE_ROOT}" && CGO_ENABLED=0 go build -trimpath -o "${OUT_BIN}/" ./hack/tools/refsuite ./hack/tools/mkimage)
suite="$("${OUT_BIN}/refsuite" build --dir "${KRUISE_CACHE}/openkruise/v1.9.0" \
  --out "${KRUISE_CACHE}/openkruise/v1.9.0/bin/e2e.test")"

# 2. Stand-in images, all from the host's static busybox (hack/tools/mkimage): each tag its own
# image (a label names it), so an update from one tag to another changes the image ID as the real
# images do. Web servers answer HTTP on port 80 with busybox httpd (a page at "/", so HTTP probes
# pass); sh stays PID 1 with a TERM trap so that containers stop at once, as nginx and httpd do.
e2e_repo="${REGISTRY_ADDR}/public/e2e-test-images"
docker_repo="${REGISTRY_ADDR}/public" # docker.io/<org>/<name> is served from public/<org>/<name>
pages="$(mktemp -d)"
mirror="${KRUISE_WORK}/containerd/certs.d/docker.io"
saved_controller="" saved_daemon="" made_standard="" made_nodes="" made_classes=()
# Called by the EXIT trap, which shellcheck does not follow.
# shellcheck disable=SC2317
cleanup() {
  local rc=$?
  rm -rf "${pages}"
  # Only the mirror this script wrote: it is marked.
  if grep -qs 'hack/reference-e2e.sh' "${mirror}/hosts.toml"; then
    rm -f "${mirror}/hosts.toml"
    rmdir "${mirror}" 2>/dev/null || true
    log "removed the docker.io mirror"
  fi
  if [[ -n "${made_nodes}" ]]; then
    remove_sim_nodes
  fi
  if [[ -n "${made_standard}" ]]; then
    kubectl delete storageclass standard --ignore-not-found >/dev/null || true
    log "removed the StorageClass standard"
  fi
  for class in "${made_classes[@]}"; do
    kubectl delete storageclass "${class}" --ignore-not-found >/dev/null || true
    log "removed the StorageClass ${class}"
  done
  if [[ -n "${saved_controller}" ]]; then
    log "restoring kruise's arguments"
    restore_args deployment/kruise-controller "${saved_controller}"
    restore_args daemonset/kruise-daemon "${saved_daemon}"
  fi
  exit "${rc}"
}
trap cleanup EXIT

# The run's simulated nodes go, then the pods bound to them, at once: once its node is gone, kwok
# no longer finishes a pod's deletion (nodes first, so that no replacement is bound to another).
# shellcheck disable=SC2317
remove_sim_nodes() {
  local n nodes
  nodes="$(kubectl get nodes -l "${kwok_label}=${kwok_value}" -o name)"
  for n in ${nodes}; do kubectl delete "${n}" --ignore-not-found >/dev/null || true; done
  for n in ${nodes}; do
    kubectl delete pods -A --field-selector "spec.nodeName=${n#node/}" --grace-period=0 --force >/dev/null 2>&1 || true
  done
  log "removed the simulated nodes of the run"
}
# sim_nodes_ready: every node of the run is Ready and has no taint left (the node lifecycle
# controller removes not-ready once the node is Ready). Called by wait_for.
# shellcheck disable=SC2317
sim_nodes_ready() {
  local got
  got="$(kubectl get nodes -l "${kwok_label}=${kwok_value}" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{" "}{.spec.taints}{"\n"}{end}')"
  [[ "$(grep -c ' True $' <<<"${got}")" == "${kwok_nodes}" ]]
}

push() { # ref, then mkimage flags; STAND_IN names the image the label records (default: ref's)
  local ref="$1"; shift
  "${OUT_BIN}/mkimage" --busybox /bin/busybox --label "io.kruise.stand-in=${STAND_IN:-${ref##*/}}" \
    --push "${ref}" "$@" >/dev/null
}
web() { # ref, document root, port
  local page id="${STAND_IN:-${1##*/}}"
  page="${pages}/$(tr -c 'A-Za-z0-9\n' '_' <<<"${id}").html"
  printf '<html><body>%s: a stand-in of kruise hack/reference-e2e.sh</body></html>\n' "${id}" >"${page}"
  push "$1" --file "${page}:$2/index.html:0644" \
    --entrypoint "[\"/bin/sh\", \"-c\", \"trap 'exit 0' TERM; httpd -f -p $3 -h $2 & wait\"]"
}
sleeper() { # ref
  push "$1" --entrypoint "[\"/bin/sh\", \"-c\", \"trap 'exit 0' TERM; sleep 2147483647 & wait\"]"
}
log "images: stand-ins -> ${e2e_repo} and ${docker_repo}/{library,...}"
# k8s.io/kubernetes v1.32.10 test/utils/image: the names, tags and registries the suite asks for.
push "${e2e_repo}/busybox:1.36.1-1" --cmd '["sh"]'
for t in 1.14-4 1.15-4; do web "${e2e_repo}/nginx:${t}" /usr/share/nginx/html 80; done
for t in 2.4.38-4 2.4.39-4; do web "${e2e_repo}/httpd:${t}" /usr/local/apache2/htdocs 80; done
web "${e2e_repo}/redis:5.0.5-3" /data 6379
# agnhost without arguments (as the CRR cases run it) only has to keep running.
sleeper "${e2e_repo}/agnhost:2.53"
# docker.io names written in the suite's cases.
for t in latest 1.32 1.33 1.34 1.35; do push "${docker_repo}/library/busybox:${t}" --cmd '["sh"]'; done
for t in latest alpine 1.14.2 1.15.1 1.23.1; do
  web "${docker_repo}/library/nginx:${t}" /usr/share/nginx/html 80
done
# The PodProbeMarker cases' "main" container runs sleep 999d, and its exec probes sh -c "ps -ef".
sleeper "${docker_repo}/library/centos:7"
# One image under two tags, as upstream when the CloneSet case "in-place update images with the
# same imageID" was written: the update must change the image name but not the image ID.
STAND_IN=nginx:alpine web "${docker_repo}/library/nginx:mainline-alpine" /usr/share/nginx/html 80
cat >"${out}/repo-list.yaml" <<YAML
# KUBE_TEST_REPO_LIST of the run (k8s.io/kubernetes test/utils/image RegistryList).
promoterE2eRegistry: ${e2e_repo}
# Nothing is pushed here: images of the "invalid registry" must fail to pull, as they do upstream.
invalidRegistry: ${REGISTRY_ADDR}/public/no-such-registry
YAML
# containerd (1.6, config_path) reads certs.d at every pull: the mirror applies at once. Its
# fallback server is the loopback registry too, so a name without a stand-in fails to pull
# (environment: image unavailable) and nothing is dialled off this machine.
mkdir -p "${mirror}"
cat >"${mirror}/hosts.toml" <<EOF
# Written by hack/reference-e2e.sh for one run of OpenKruise's e2e suite, removed after it:
# docker.io/<org>/<name> from ${docker_repo}/<org>/<name> on the loopback registry.
server = "http://${REGISTRY_ADDR}"

[host."http://${REGISTRY_ADDR}/v2/public"]
  capabilities = ["pull", "resolve"]
  override_path = true
EOF
log "docker.io mirror: ${mirror}/hosts.toml"
# kind's default StorageClass, which the suite's cases name (deletion protection's claim): the
# local cluster's provisioner under that name, for the run only.
if ! kubectl get storageclass standard >/dev/null 2>&1; then
  kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: standard}
provisioner: kruise.local/localpv
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
YAML
  made_standard=1
  log "StorageClass standard (localpv's provisioner) for the run"
fi
# The two classes the Advanced StatefulSet volume expansion cases name (VolumeExpansion v1beta1),
# as the reference's CI makes them: localpv's, one letting claims grow and one not.
for class in allow-volume-expansion disallow-volume-expansion; do
  kubectl get storageclass "${class}" >/dev/null 2>&1 && continue
  expand=true
  [[ "${class}" == disallow-* ]] && expand=false
  kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: ${class}}
provisioner: kruise.local/localpv
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: ${expand}
YAML
  made_classes+=("${class}")
  log "StorageClass ${class} (localpv's provisioner, allowVolumeExpansion ${expand}) for the run"
done

# 3. The reference CI's gates (its config/manager/manager.yaml at v1.9.0): the manager gets
# AllAlpha=true,AllBeta=true,EnableExternalCerts=false,TemplateNoDefaults=false, the daemon
# AllAlpha=true,AllBeta=true and --max-workers-for-pull-image=2. kruise accepts OpenKruise's gate
# names (pkg/process/features) and ignores, with a warning, those it does not implement.
args_of() { kubectl -n kruise-system get "$1" -o jsonpath='{.spec.template.spec.containers[0].args}'; }
# shellcheck disable=SC2317
restore_args() { # object, JSON array of arguments
  kubectl -n kruise-system patch "$1" --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/args\",\"value\":$2}]" >/dev/null
  kubectl -n kruise-system rollout status "$1" --timeout=180s >/dev/null
}
set_gates() { # object, gates, extra argument or ""
  local obj="$1" gates="$2" extra="$3" i=0 idx="" a
  while IFS= read -r a; do
    [[ "${a}" == --feature-gates=* ]] && idx="${i}"
    i=$((i + 1))
  done < <(kubectl -n kruise-system get "${obj}" -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}')
  [[ -n "${idx}" ]] || die "${obj} has no --feature-gates argument"
  local ops="{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/args/${idx}\",\"value\":\"--feature-gates=${gates}\"}"
  [[ -z "${extra}" ]] || ops+=",{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"${extra}\"}"
  kubectl -n kruise-system patch "${obj}" --type=json -p "[${ops}]" >/dev/null
}
saved_controller="$(args_of deployment/kruise-controller)"
saved_daemon="$(args_of daemonset/kruise-daemon)"
[[ "${saved_controller}" == \[* && "${saved_daemon}" == \[* ]] || die "cannot read kruise's arguments: is kruise deployed?"
log "feature gates for the run: AllAlpha=true,AllBeta=true (the reference's CI)"
set_gates deployment/kruise-controller "AllAlpha=true,AllBeta=true,EnableExternalCerts=false,TemplateNoDefaults=false" ""
set_gates daemonset/kruise-daemon "AllAlpha=true,AllBeta=true" "--max-workers-for-pull-image=2"
kubectl -n kruise-system rollout status daemonset/kruise-daemon --timeout=180s >/dev/null
kubectl -n kruise-system rollout status deployment/kruise-controller --timeout=180s >/dev/null
# The API server keeps connections to the webhook's old endpoints a while after a rollout: wait
# until a CloneSet sent as v1alpha1 goes through /convert and the validating webhook (a
# server-side dry run), or the first cases fail on a conversion timeout.
cat >"${out}/probe.yaml" <<YAML
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: reference-e2e-probe, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: reference-e2e-probe}}
  template:
    metadata: {labels: {app: reference-e2e-probe}}
    spec: {containers: [{name: c, image: ${e2e_repo}/busybox:1.36.1-1}]}
YAML
wait_for "kruise's webhooks to answer" 180 \
  "${K8S_BIN}/kubectl" create --dry-run=server -f "${out}/probe.yaml" || die "kruise's webhooks do not answer"
# Simulated nodes for the run (REF_KWOK_NODES), untainted: the suite's pods carry no toleration.
# Made only now that kruise runs with the run's gates: an untainted node would take kruise's own
# new pods too, which need real containers (the webhooks would not answer).
if ((kwok_nodes > 0)); then
  made_nodes=1
  for i in $(seq 0 $((kwok_nodes - 1))); do
    kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: kwok-ref-${i}
  # kubernetes.io/os and arch as a kubelet sets them (the PersistentPodState case records os).
  labels: {${kwok_label}: ${kwok_value}, type: virtual-kubelet, kubernetes.io/hostname: kwok-ref-${i}, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
YAML
  done
  wait_for "${kwok_nodes} simulated nodes Ready (is kwok running? hack/cluster.sh status)" 90 sim_nodes_ready ||
    die "the simulated nodes did not become Ready: see ${KRUISE_WORK}/logs/kwok.log"
  log "${kwok_nodes} simulated nodes for the run: kwok-ref-0..$((kwok_nodes - 1))"
fi

restarts() { kubectl -n kruise-system get pods -o jsonpath='{range .items[*]}{.metadata.name}={.status.containerStatuses[0].restartCount}{" "}{end}'; }
before="$(restarts)"

# 4. The run. Serial: the reference's CI runs four Ginkgo processes on a four-node kind cluster;
# here there is one node with two cores.
log "running OpenKruise's suite, focus ${focus}${skip:+, skip ${skip}}${files:+, files ${files}} (log: ${out}/suite.log)"
rm -f "${out}/report.json"
set +e
KUBE_TEST_REPO_LIST="${out}/repo-list.yaml" "${suite}" -kubeconfig="${KUBECONFIG}" \
  -ginkgo.focus="${focus}" ${skip:+-ginkgo.skip="${skip}"} ${files:+-ginkgo.focus-file="${files}"} -ginkgo.timeout="${timeout}" \
  -ginkgo.no-color -ginkgo.json-report="${out}/report.json" >"${out}/suite.log" 2>&1
suite_rc=$?
set -e
# As the reference's CI script checks: a kruise pod that restarted during the run (pods that
# came or went with a rollout are not compared).
for p in $(restarts); do
  for b in ${before}; do
    [[ "${b%=*}" != "${p%=*}" || "${b}" == "${p}" ]] || log "WARNING: ${p%=*} restarted during the run (${b#*=} -> ${p#*=} restarts)"
  done
done
[[ -s "${out}/report.json" ]] || die "the suite wrote no report (exit ${suite_rc}): see ${out}/suite.log"

# The classification; its exit status is the target's (1: an unexpected failure).
set +e
"${OUT_BIN}/refsuite" classify --known "${KRUISE_ROOT}/test/reference/known.yaml" \
  --report "${out}/report.json" | tee "${out}/result.txt"
rc=${PIPESTATUS[0]}
set -e
log "report: ${out}/report.json, suite log: ${out}/suite.log, result: ${out}/result.txt"
exit "${rc}"
}
