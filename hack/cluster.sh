#!/usr/bin/env bash
# The local single-node cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# containerd, one kubelet, an OCI registry and a volume provisioner, all on this machine and on
# loopback.
#
#   hack/cluster.sh up       build what is missing, start what is not running, wait for node Ready
#   hack/cluster.sh down     stop everything started here and remove every trace of it
#   hack/cluster.sh status   show each component and the node
#   hack/cluster.sh env      print the exports a shell needs to use the cluster
#   hack/cluster.sh stop C   stop one component of a running cluster (SIGTERM, SIGKILL after a timeout)
#   hack/cluster.sh start C  start it again with the command line of `up` and wait until it is healthy
#
# C is etcd, kube-apiserver, apiforward, kube-controller-manager, kube-scheduler, containerd,
# criproxy, kubelet or runtime. apiforward makes the API server (on 127.0.0.1:6443) reachable from
# pods at the bridge's host address 10.244.0.1:6443 (docs/development.md, "Webhooks on the local
# cluster"). runtime is criproxy and containerd together: kruise-daemon dials the proxy, so
# restarting containerd alone leaves the daemon's own gRPC connection up (its calls fail through
# the proxy while containerd is away); stopping runtime cuts that connection as a real runtime
# restart does. Stopping containerd leaves its shims, so the pods' containers keep running. The
# registry is not offered: it keeps manifests in memory only, so a restart loses every pushed image.
# C may also be localpv (hack/tools/localpv), which provisions and resizes the volumes of the
# default StorageClass localpv: directories under the work dir's volumes/, which `down` removes,
# or kwok (sigs.k8s.io/kwok, built by hack/kwok.sh), the kubelet of the simulated nodes that tests
# add: Nodes labelled kwok.x-k8s.io/node (test/e2e/framework/simnodes.go). It idles while there
# are none.
#
# K8S_VERSION=v1.30.14 (or 1.30) brings the cluster up at another Kubernetes release (lib.sh); the
# version is recorded, and changing it needs `down` first.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

W="${KRUISE_WORK}"
PKI="${W}/pki"
PIDS="${W}/pids"
LOGS="${W}/logs"

export KUBECONFIG="${W}/admin.kubeconfig"
export KUBECACHEDIR="${W}/kube-cache"

SERVICE_CIDR="10.0.0.0/24"
POD_CIDR="10.244.0.0/24"
BRIDGE="kruise0"
BRIDGE_IP="10.244.0.1"
BRIDGE_ADDR="${BRIDGE_IP}/24"
# Simulated nodes (kwok): the label that hands a Node to kwok, and the addresses kwok gives them and
# their pods, a range routed to unreachable like the service CIDR: nothing can dial them.
KWOK_NODE_LABEL="kwok.x-k8s.io/node"
KWOK_CIDR="10.246.0.0/16"
KWOK_NODE_IP="10.246.255.254"
# Where pods on the bridge reach the API server: hack/tools/tcpforward to 127.0.0.1:6443.
APIFORWARD_ADDR="${BRIDGE_IP}:6443"
NODE_NAME="$(hostname | tr '[:upper:]' '[:lower:]')"

# Host paths that kubelet, containerd and CNI create at fixed locations. `up` records which of them
# did not exist before, and `down` removes exactly those.
HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/netns
  /run/containerd /etc/kubernetes /usr/libexec/kubernetes /opt/containerd /opt/cni /etc/cni)

kubectl() { "${K8S_BIN}/kubectl" "$@"; }
crictl() { "${CRICTL_BIN}/crictl" --runtime-endpoint "unix://${CTR_SOCK}" --image-endpoint "unix://${CTR_SOCK}" "$@"; }

node_ip() {
  ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}'
}

# ---- processes -------------------------------------------------------------------------------

# alive PID: the process exists and is not a zombie (this VM's init reaps orphans late).
alive() {
  local pid="$1" state
  [[ -n "${pid}" && -r "/proc/${pid}/stat" ]] || return 1
  state=$(awk '{print $3}' "/proc/${pid}/stat" 2>/dev/null) || return 1
  [[ "${state}" != "Z" && -n "${state}" ]]
}

running() {
  local f="${PIDS}/$1.pid"
  [[ -f "${f}" ]] && alive "$(cat "${f}")"
}

# start NAME CMD...: start CMD detached, logging to LOGS/NAME.log, unless NAME already runs.
start() {
  local name="$1"; shift
  if running "${name}"; then return 0; fi
  mkdir -p "${PIDS}" "${LOGS}"
  log "starting ${name}"
  (
    # Close every descriptor above stderr the caller left open: a component runs for hours and
    # must not hold the caller's files (a lock taken with flock around `make deploy` would stay
    # held for as long as the cluster runs).
    for fd in /proc/"${BASHPID}"/fd/*; do
      fd="${fd##*/}"
      if ((fd > 2)); then eval "exec ${fd}>&-" 2>/dev/null || true; fi
    done
    exec setsid "$@" >>"${LOGS}/${name}.log" 2>&1 </dev/null
  ) &
  echo $! >"${PIDS}/${name}.pid"
}

# stop_pid PID TIMEOUT: SIGTERM, wait, then SIGKILL.
stop_pid() {
  local pid="$1" timeout="${2:-15}"
  alive "${pid}" || return 0
  kill -TERM "${pid}" 2>/dev/null || true
  local deadline=$((SECONDS + timeout))
  while alive "${pid}" && ((SECONDS < deadline)); do sleep 0.2; done
  if alive "${pid}"; then
    log "pid ${pid} ignored SIGTERM for ${timeout}s: killing"
    kill -KILL "${pid}" 2>/dev/null || true
    while alive "${pid}"; do sleep 0.1; done
  fi
}

stop() {
  local name="$1" f="${PIDS}/$1.pid"
  [[ -f "${f}" ]] || return 0
  if running "${name}"; then log "stopping ${name}"; fi
  stop_pid "$(cat "${f}")" "${2:-15}"
  rm -f "${f}"
}

# ---- build and configuration ------------------------------------------------------------------

build_tools() {
  mkdir -p "${OUT_BIN}"
  log "building registry, mkimage, pause, criproxy and tcpforward tools"
  (cd "${KRUISE_ROOT}" && CGO_ENABLED=0 go build -trimpath -o "${OUT_BIN}/" \
    ./hack/tools/registry ./hack/tools/mkimage ./hack/tools/pause ./hack/tools/criproxy ./hack/tools/tcpforward)
}

write_kubeconfig() {
  local file="$1" user="$2" cert="$3"
  [[ -f "${file}" ]] && return
  kubectl config --kubeconfig="${file}" set-cluster local --server=https://127.0.0.1:6443 \
    --certificate-authority="${PKI}/ca.crt" --embed-certs=true >/dev/null
  kubectl config --kubeconfig="${file}" set-credentials "${user}" \
    --client-certificate="${PKI}/${cert}.crt" --client-key="${PKI}/${cert}.key" --embed-certs=true >/dev/null
  kubectl config --kubeconfig="${file}" set-context local --cluster=local --user="${user}" >/dev/null
  kubectl config --kubeconfig="${file}" use-context local >/dev/null
}

# kubelet_version_fields: the kubelet configuration fields that only some minors know; a kubelet
# warns about a field it does not know, and the others would take their defaults.
kubelet_version_fields() {
  # failCgroupV1 (1.31+): this machine has cgroup v1, which 1.30 supports without the option.
  if ((K8S_MINOR >= 31)); then echo "failCgroupV1: false"; fi
}

# check_version: the running cluster's binaries are those of K8S_VERSION. Its version is recorded
# at `up`; lib.sh adopts it when K8S_VERSION is unset, so only an explicit other version differs.
check_version() {
  local have="${K8S_DEFAULT_VERSION}"
  [[ -s "${K8S_VERSION_FILE}" ]] && have="$(cat "${K8S_VERSION_FILE}")"
  [[ "${have}" == "${K8S_VERSION}" ]] && return 0
  any_running || return 0
  die "the local cluster runs Kubernetes ${have}, not ${K8S_VERSION}: \`make down\` first to change versions"
}

write_configs() {
  local ip="$1"
  mkdir -p "${W}"/{containerd,cni/net.d,cni/ipam,kubelet/root,kubelet/pod-logs,kubelet/volume-plugins,flexvolume,etcd}
  bash "${KRUISE_ROOT}/hack/pki.sh" "${PKI}" "${NODE_NAME}" "${ip}" "${BRIDGE_IP}"
  write_kubeconfig "${W}/admin.kubeconfig" admin admin
  write_kubeconfig "${W}/controller-manager.kubeconfig" kube-controller-manager controller-manager
  write_kubeconfig "${W}/scheduler.kubeconfig" kube-scheduler scheduler
  write_kubeconfig "${W}/kubelet.kubeconfig" "system:node:${NODE_NAME}" kubelet-client

  mkdir -p "${W}/containerd/certs.d/${REGISTRY_ADDR}"
  cat >"${W}/containerd/certs.d/${REGISTRY_ADDR}/hosts.toml" <<EOF
# The loopback test registry speaks plain HTTP.
server = "http://${REGISTRY_ADDR}"

[host."http://${REGISTRY_ADDR}"]
  capabilities = ["pull", "resolve", "push"]
EOF
  cat >"${W}/containerd/config.toml" <<EOF
version = 2
root = "${W}/containerd/root"
state = "${W}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "${CTR_SOCK}"

[plugins."io.containerd.internal.v1.opt"]
  path = "${W}/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${REGISTRY_ADDR}/public/pause:3.10"
  # This VM lacks CAP_SYS_RESOURCE: without this every RunPodSandbox fails.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${W}/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${W}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "${W}/containerd/certs.d"
EOF
  # A bridge with a host address and no gateway route in pods: the host reaches pod IPs (httpGet
  # hooks), pods reach only their bridge, and nothing is forwarded or masqueraded anywhere.
  cat >"${W}/cni/net.d/10-kruise.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kruise-local",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${BRIDGE}",
      "isGateway": false,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "${W}/cni/ipam",
        "ranges": [[{"subnet": "${POD_CIDR}", "rangeStart": "10.244.0.10", "gateway": "10.244.0.1"}]]
      }
    }
  ]
}
EOF
  cat >"${W}/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${PKI}/ca.crt
authorization:
  mode: Webhook
tlsCertFile: ${PKI}/kubelet-serving.crt
tlsPrivateKeyFile: ${PKI}/kubelet-serving.key
cgroupDriver: cgroupfs
failSwapOn: false
$(kubelet_version_fields)
containerRuntimeEndpoint: unix://${CTR_SOCK}
podLogsDir: ${W}/kubelet/pod-logs
volumePluginDir: ${W}/kubelet/volume-plugins
clusterDomain: cluster.local
serializeImagePulls: false
# Keep test images and never evict on a busy test machine.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
EOF
}

# ---- network safety -------------------------------------------------------------------------

network_up() {
  [[ "$(cat /proc/sys/net/ipv4/ip_forward)" == 0 ]] ||
    die "net.ipv4.ip_forward is 1: the local cluster requires forwarding off so pods cannot reach other hosts"
  # Nothing serves the service CIDR here; make sure the kubernetes service IP is never dialled.
  if ! ip route show type unreachable | grep -q "^unreachable ${SERVICE_CIDR}"; then
    log "routing ${SERVICE_CIDR} (service CIDR) to unreachable"
    ip route add unreachable "${SERVICE_CIDR}"
  fi
  if ! ip route show type unreachable | grep -q "^unreachable ${KWOK_CIDR}"; then
    log "routing ${KWOK_CIDR} (simulated nodes and their pods) to unreachable"
    ip route add unreachable "${KWOK_CIDR}"
  fi
  if ! ip link show "${BRIDGE}" >/dev/null 2>&1; then
    log "creating bridge ${BRIDGE} ${BRIDGE_ADDR}"
    ip link add "${BRIDGE}" type bridge
    ip addr add "${BRIDGE_ADDR}" dev "${BRIDGE}"
    ip link set "${BRIDGE}" up
  fi
}

# ---- up -------------------------------------------------------------------------------------

apiserver_ready() {
  curl -sf --max-time 2 --cacert "${PKI}/ca.crt" --cert "${PKI}/admin.crt" --key "${PKI}/admin.key" \
    https://127.0.0.1:6443/readyz >/dev/null
}

node_ready() {
  [[ "$(kubectl get node "${NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

any_running() {
  local c
  for c in registry etcd kube-apiserver apiforward kube-controller-manager kube-scheduler containerd criproxy kubelet localpv kwok; do
    running "${c}" && return 0
  done
  return 1
}

healthy() {
  local c
  for c in registry etcd kube-apiserver apiforward kube-controller-manager kube-scheduler containerd criproxy kubelet localpv kwok; do
    running "${c}" || return 1
  done
  apiserver_ready && node_ready
}

record_host_state() {
  [[ -f "${W}/host-state/recorded" ]] && return
  mkdir -p "${W}/host-state"
  local p
  for p in "${HOST_PATHS[@]}"; do [[ -e "${p}" ]] || echo "${p}"; done >"${W}/host-state/created-paths"
  for t in filter nat mangle; do
    iptables -t "${t}" -S 2>/dev/null | awk '$1 == "-N" {print $2}' | sed "s/^/${t} /"
  done >"${W}/host-state/iptables-chains"
  touch "${W}/host-state/recorded"
}

start_etcd() {
  start etcd "${ETCD_BIN}/etcd" --name local --data-dir "${W}/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster local=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
    --log-level warn
  wait_for "etcd health" 60 curl -sf --max-time 2 http://127.0.0.1:2379/health || die "etcd did not start: see ${LOGS}/etcd.log"
}

start_apiserver() {
  start kube-apiserver "${K8S_BIN}/kube-apiserver" \
    --bind-address=127.0.0.1 --secure-port=6443 --advertise-address=127.0.0.1 \
    --endpoint-reconciler-type=none \
    --enable-aggregator-routing=true \
    --etcd-servers=http://127.0.0.1:2379 \
    --service-cluster-ip-range="${SERVICE_CIDR}" \
    --tls-cert-file="${PKI}/apiserver.crt" --tls-private-key-file="${PKI}/apiserver.key" \
    --client-ca-file="${PKI}/ca.crt" \
    --kubelet-client-certificate="${PKI}/apiserver-kubelet-client.crt" \
    --kubelet-client-key="${PKI}/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="${PKI}/ca.crt" \
    --kubelet-preferred-address-types=Hostname \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="${PKI}/sa.pub" --service-account-signing-key-file="${PKI}/sa.key" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement \
    --allow-privileged=true \
    --requestheader-client-ca-file="${PKI}/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --requestheader-group-headers=X-Remote-Group --requestheader-username-headers=X-Remote-User \
    --proxy-client-cert-file="${PKI}/front-proxy-client.crt" \
    --proxy-client-key-file="${PKI}/front-proxy-client.key" \
    --audit-log-path="${LOGS}/audit.log" --audit-policy-file="${W}/audit-policy.yaml" \
    --audit-log-maxsize=100 --audit-log-maxbackup=1
  wait_for "kube-apiserver /readyz" 90 apiserver_ready || die "kube-apiserver not ready: see ${LOGS}/kube-apiserver.log"
}

# The API server's one --bind-address is loopback; pods (no host network, no default route) reach
# it on the bridge's host address through this forwarder. --enable-aggregator-routing=true above
# is the other half: the API server calls webhook Services at their endpoints (pod IPs on the
# bridge), not at a ClusterIP (routed to unreachable here).
apiforward_ready() {
  curl -sf --max-time 2 --cacert "${PKI}/ca.crt" --cert "${PKI}/admin.crt" --key "${PKI}/admin.key" \
    "https://${APIFORWARD_ADDR}/readyz" >/dev/null
}

start_apiforward() {
  start apiforward "${OUT_BIN}/tcpforward" --listen "${APIFORWARD_ADDR}" --upstream 127.0.0.1:6443 \
    --allow-cidr "${POD_CIDR}"
  wait_for "API server at ${APIFORWARD_ADDR}" 30 apiforward_ready || die "apiforward not ready: see ${LOGS}/apiforward.log"
}

# The controller manager and the scheduler have no health wait in `up`, which waits for the node
# (it needs neither); start_component waits for their /healthz.
start_controller_manager() {
  start kube-controller-manager "${K8S_BIN}/kube-controller-manager" \
    --kubeconfig="${W}/controller-manager.kubeconfig" \
    --authentication-kubeconfig="${W}/controller-manager.kubeconfig" \
    --authorization-kubeconfig="${W}/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
    --service-account-private-key-file="${PKI}/sa.key" --root-ca-file="${PKI}/ca.crt" \
    --use-service-account-credentials=true \
    --flex-volume-plugin-dir="${W}/flexvolume" \
    --requestheader-client-ca-file="${PKI}/front-proxy-ca.crt"
}

start_scheduler() {
  start kube-scheduler "${K8S_BIN}/kube-scheduler" \
    --kubeconfig="${W}/scheduler.kubeconfig" \
    --authentication-kubeconfig="${W}/scheduler.kubeconfig" \
    --authorization-kubeconfig="${W}/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false \
    --requestheader-client-ca-file="${PKI}/front-proxy-ca.crt"
}

start_control_plane() {
  start_etcd
  start_apiserver
  start_apiforward
  start_controller_manager
  start_scheduler
}

start_containerd() {
  start containerd /usr/bin/containerd --config "${W}/containerd/config.toml"
  wait_for "containerd CRI" 60 crictl version || die "containerd not ready: see ${LOGS}/containerd.log"
}

# criproxy_ready: the proxy answers CRI Version, which it forwards to containerd. (Only a socket
# file would not do after `stop criproxy`: a stopped proxy may leave its socket behind.)
criproxy_ready() {
  test -S "${CRIPROXY_SOCK}" &&
    "${CRICTL_BIN}/crictl" --runtime-endpoint "unix://${CRIPROXY_SOCK}" --image-endpoint "unix://${CRIPROXY_SOCK}" version
}

start_criproxy() {
  # kruise-daemon reaches containerd through this proxy, which records every CRI PullImage
  # (image, sandbox labels and annotations; never credentials) for the e2e tests, and holds the
  # calls hang.json names without answering (a hung runtime; test/e2e/framework HangRuntime). A
  # hang.json left by a test that did not finish is not carried over.
  mkdir -p "${W}/criproxy"
  rm -f "${W}/criproxy/hang.json"
  start criproxy "${OUT_BIN}/criproxy" --listen "${CRIPROXY_SOCK}" --upstream "${CTR_SOCK}" \
    --record "${W}/criproxy/pulls.jsonl" --hang-file "${W}/criproxy/hang.json"
  wait_for "CRI proxy" 30 criproxy_ready || die "criproxy did not start: see ${LOGS}/criproxy.log"
}

start_kubelet() {
  local ip="$1"
  start kubelet "${K8S_BIN}/kubelet" --config="${W}/kubelet/config.yaml" \
    --kubeconfig="${W}/kubelet.kubeconfig" --root-dir="${W}/kubelet/root" \
    --hostname-override="${NODE_NAME}" --node-ip="${ip}" --v=1
  wait_for "node ${NODE_NAME} Ready" 120 node_ready || die "node not Ready: see ${LOGS}/kubelet.log"
}

start_node() {
  local ip="$1"
  start_containerd
  start_criproxy
  bash "${KRUISE_ROOT}/hack/images.sh" local-node
  start_kubelet "${ip}"
}

# localpv: the dynamic provisioner of node-local directories (hack/tools/localpv, its own module,
# built by hack/build-localpv.sh). It creates the default StorageClass when it starts; it listens
# on nothing.
localpv_ready() {
  running localpv && kubectl get storageclass localpv >/dev/null 2>&1
}

start_localpv() {
  local bin
  bin=$(bash "${KRUISE_ROOT}/hack/build-localpv.sh") || die "localpv did not build"
  mkdir -p "${W}/volumes"
  start localpv "${bin}" --kubeconfig "${W}/admin.kubeconfig" --node-name "${NODE_NAME}" \
    --root "${W}/volumes" --storage-class localpv
  wait_for "localpv and its StorageClass" 60 localpv_ready || die "localpv not ready: see ${LOGS}/localpv.log"
}

# kwok acts as the kubelet of every Node labelled KWOK_NODE_LABEL (hack/kwok-stages.yaml: node
# Ready with a Lease heartbeat, pods Running and Ready, deleted when their grace period ends). It
# watches those Nodes and the pods bound to them, so it costs nothing while no test has added one.
kwok_ready() {
  running kwok && grep -q "Watch nodes" "${LOGS}/kwok.log" 2>/dev/null
}

start_kwok() {
  local bin
  bin=$(bash "${KRUISE_ROOT}/hack/kwok.sh") || die "kwok did not build"
  # A copy in the work directory: the checkout it came from may change while the cluster runs.
  cp "${KRUISE_ROOT}/hack/kwok-stages.yaml" "${W}/kwok-stages.yaml"
  start kwok "${bin}" --kubeconfig "${W}/admin.kubeconfig" --config "${W}/kwok-stages.yaml" \
    --manage-nodes-with-label-selector "${KWOK_NODE_LABEL}" --node-lease-duration-seconds 40 \
    --cidr "${KWOK_CIDR}" --node-ip "${KWOK_NODE_IP}"
  wait_for "kwok (simulated nodes)" 60 kwok_ready || die "kwok not ready: see ${LOGS}/kwok.log"
}

write_audit_policy() {
  # Metadata for requests of kruise's service accounts (who listed/watched what); nothing else.
  cat >"${W}/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts:kruise-system"]
  - level: None
EOF
}

up() {
  [[ $(id -u) == 0 ]] || die "the local cluster needs root (containerd, kubelet, network)"
  check_version
  if healthy; then log "local cluster is already up (Kubernetes ${K8S_VERSION}, node ${NODE_NAME} Ready)"; return 0; fi
  if [[ -d "${W}" ]] && ! any_running; then
    # Processes gone without `down` (killed, machine restarted): clear their mounts, sandboxes
    # and network before starting again rather than building on stale state.
    log "found state of a cluster whose processes are gone: cleaning it up first"
    # Pods may outlive a killed containerd (their shims keep running); a restarted containerd
    # reconnects to them, so down can remove them through CRI.
    if [[ -f "${W}/containerd/config.toml" ]]; then
      start containerd /usr/bin/containerd --config "${W}/containerd/config.toml"
      wait_for "containerd CRI" 60 crictl version || log "containerd did not come back; cleaning up without it"
    fi
    (down) || die "could not clean up the stale cluster state in ${W}"
  fi
  local ip
  ip=$(node_ip)
  [[ -n "${ip}" ]] || die "no global IPv4 address found for the node IP (the kubelet refuses loopback)"

  bash "${KRUISE_ROOT}/hack/install-deps.sh"
  bash "${KRUISE_ROOT}/hack/build-k8s.sh"
  build_tools
  mkdir -p "${W}"
  echo "${K8S_VERSION}" >"${K8S_VERSION_FILE}"
  record_host_state
  network_up
  write_configs "${ip}"
  write_audit_policy

  start registry "${OUT_BIN}/registry" --addr "${REGISTRY_ADDR}" --data-dir "${W}/registry" \
    --basic-user "${REGISTRY_USER}" --basic-password "${REGISTRY_BASIC_PASSWORD}" \
    --token-user "${REGISTRY_USER}" --token-password "${REGISTRY_TOKEN_PASSWORD}"
  wait_for "registry" 30 curl -s --max-time 2 -o /dev/null "http://${REGISTRY_ADDR}/v2/" || die "registry did not start: see ${LOGS}/registry.log"
  start_control_plane
  start_node "${ip}"
  start_localpv
  start_kwok
  verify_network
  log "local cluster up: Kubernetes ${K8S_VERSION}, node ${NODE_NAME} Ready; export KUBECONFIG=${KUBECONFIG}"
}

# verify_network checks the rules the cluster must keep: the service IP is unreachable (not
# routed anywhere), forwarding is off and the pod bridge does not masquerade.
verify_network() {
  local route
  route=$(ip route get 10.0.0.1 2>&1 || true)
  [[ "${route}" == *unreachable* || "${route}" == *"No route"* ]] ||
    die "service IP 10.0.0.1 is routable (${route}); refusing to continue"
  route=$(ip route get "${KWOK_NODE_IP}" 2>&1 || true)
  [[ "${route}" == *unreachable* || "${route}" == *"No route"* ]] ||
    die "simulated nodes' address ${KWOK_NODE_IP} is routable (${route}); refusing to continue"
  [[ "$(cat /proc/sys/net/ipv4/ip_forward)" == 0 ]] || die "net.ipv4.ip_forward was turned on"
  if iptables -t nat -S 2>/dev/null | grep -q -- "-s ${POD_CIDR}"; then
    die "found a NAT rule for the pod CIDR ${POD_CIDR}"
  fi
}

# ---- down -----------------------------------------------------------------------------------

remove_pods() {
  running containerd || return 0
  log "removing all pod sandboxes"
  crictl rmp -af >/dev/null 2>&1 || crictl rmp -af >/dev/null 2>&1 || true
}

# Shims outlive containerd by design; ours are the ones whose address is our socket.
stop_shims() {
  local p
  for p in /proc/[0-9]*; do
    [[ -r "${p}/cmdline" ]] || continue
    if { tr '\0' ' ' <"${p}/cmdline"; } 2>/dev/null | grep -q -- "-address ${CTR_SOCK}"; then
      stop_pid "${p#/proc/}" 5
    fi
  done
}

unmount_all() {
  # Only mounts inside our work dir or inside host paths we created; deepest first.
  local roots=("${W}") m root
  if [[ -f "${W}/host-state/created-paths" ]]; then
    while read -r m; do [[ -n "${m}" ]] && roots+=("${m}"); done <"${W}/host-state/created-paths"
  fi
  for root in "${roots[@]}"; do
    awk -v r="${root}" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -r |
      while read -r m; do
        umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null || log "could not unmount ${m}"
      done
  done
}

# The kubelet's cgroups, once the pods' processes have left them. A process of a pod killed with
# its shim can take a moment to exit (longer on a loaded machine), and rmdir fails while it is
# there: try for up to 15 s, and past 5 s kill what is still inside (only our pods live there).
remove_cgroups() {
  local d try left pid
  for try in $(seq 1 30); do
    left=0
    for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
      [[ -d "${d}" ]] || continue
      find "${d}" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [[ -d "${d}" ]] || continue
      left=1
      if (( try > 10 )); then
        find "${d}" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u | while read -r pid; do
          [[ -n "${pid}" ]] && kill -KILL "${pid}" 2>/dev/null
        done
      fi
    done
    (( left )) || return 0
    sleep 0.5
  done
  for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [[ -d "${d}" ]] && log "could not remove cgroup ${d}"
  done
  return 0
}

remove_iptables_chains() {
  local t c
  for t in filter nat mangle; do
    iptables -t "${t}" -S 2>/dev/null | awk '$1 == "-N" {print $2}' | while read -r c; do
      [[ "${c}" == KUBE-* ]] || continue
      grep -qx "${t} ${c}" "${W}/host-state/iptables-chains" 2>/dev/null && continue
      # Drop the jumps to it first, then the chain itself.
      iptables -t "${t}" -S | grep -- "-j ${c}\b" | sed 's/^-A/-D/' | while read -r rule; do
        # shellcheck disable=SC2086
        iptables -t "${t}" ${rule} 2>/dev/null || true
      done
      iptables -t "${t}" -F "${c}" 2>/dev/null || true
      iptables -t "${t}" -X "${c}" 2>/dev/null || true
    done
  done
}

down() {
  [[ -d "${W}" ]] || { log "local cluster is not up (no ${W})"; return 0; }
  [[ $(id -u) == 0 ]] || die "down needs root"
  # Cleanup is best effort step by step; leftovers() judges the result at the end.
  set +e +o pipefail
  stop kwok
  stop localpv
  stop kubelet 30
  remove_pods
  stop criproxy
  stop containerd 15
  stop_shims
  stop kube-scheduler
  stop kube-controller-manager
  stop apiforward
  stop kube-apiserver 30
  stop etcd 15   # last: an apiserver whose etcd is gone hangs on shutdown
  stop registry
  unmount_all
  remove_cgroups
  remove_iptables_chains
  ip link del "${BRIDGE}" 2>/dev/null || true
  ip route del unreachable "${SERVICE_CIDR}" 2>/dev/null || true
  ip route del unreachable "${KWOK_CIDR}" 2>/dev/null || true
  if [[ -f "${W}/host-state/created-paths" ]]; then
    while read -r p; do
      [[ -n "${p}" && -e "${p}" ]] && rm -rf --one-file-system "${p}"
    done <"${W}/host-state/created-paths"
  fi
  local left
  left=$(leftovers)
  if [[ -n "${left}" ]]; then
    log "local cluster is down, but these are left (kept ${W} for inspection):"
    echo "${left}" >&2
    return 1
  fi
  rm -rf --one-file-system "${W}"
  log "local cluster is down; nothing of it is left"
}

# leftovers lists whatever of the cluster is still on the machine: processes, mounts, network,
# cgroups, iptables chains and host paths it created.
leftovers() {
  local f p
  for f in "${PIDS}"/*.pid; do
    [[ -f "${f}" ]] && alive "$(cat "${f}")" && echo "process $(basename "${f}" .pid) ($(cat "${f}"))"
  done
  for p in /proc/[0-9]*; do
    # A process may exit between the glob and the read: that is not an error.
    { tr '\0' ' ' <"${p}/cmdline"; } 2>/dev/null | grep -q -- "-address ${CTR_SOCK}" && alive "${p#/proc/}" &&
      echo "containerd shim ${p#/proc/}"
  done
  awk -v r="${W}" '$2 == r || index($2, r "/") == 1 {print "mount " $2}' /proc/self/mounts
  ip link show "${BRIDGE}" >/dev/null 2>&1 && echo "bridge ${BRIDGE}"
  ip route show type unreachable | grep -q "^unreachable ${SERVICE_CIDR}" && echo "route unreachable ${SERVICE_CIDR}"
  ip route show type unreachable | grep -q "^unreachable ${KWOK_CIDR}" && echo "route unreachable ${KWOK_CIDR}"
  for p in /sys/fs/cgroup/*/kubepods; do [[ -d "${p}" ]] && echo "cgroup ${p}"; done
  for f in filter nat mangle; do
    iptables -t "${f}" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}' | while read -r p; do
      grep -qx "${f} ${p}" "${W}/host-state/iptables-chains" 2>/dev/null || echo "iptables chain ${f}/${p}"
    done
  done
  if [[ -f "${W}/host-state/created-paths" ]]; then
    while read -r p; do [[ -n "${p}" && -e "${p}" ]] && echo "path ${p}"; done <"${W}/host-state/created-paths"
  fi
  return 0
}

status() {
  local c rc=0
  for c in registry etcd kube-apiserver apiforward kube-controller-manager kube-scheduler containerd criproxy kubelet localpv kwok; do
    if running "${c}"; then printf '%-24s running (pid %s)\n' "${c}" "$(cat "${PIDS}/${c}.pid")"
    else printf '%-24s stopped\n' "${c}"; rc=1; fi
  done
  if apiserver_ready && node_ready; then echo "node ${NODE_NAME}: Ready"; else echo "node ${NODE_NAME}: not Ready"; rc=1; fi
  echo "Kubernetes ${K8S_VERSION}"
  echo "KUBECONFIG=${KUBECONFIG}"
  return "${rc}"
}

# ---- one component ---------------------------------------------------------------------------

COMPONENTS="etcd|kube-apiserver|apiforward|kube-controller-manager|kube-scheduler|containerd|criproxy|kubelet|localpv|kwok|runtime"

# component_preflight: stop and start act on a cluster that `up` configured, as root.
component_preflight() {
  [[ $(id -u) == 0 ]] || die "stopping and starting components needs root"
  [[ -f "${W}/containerd/config.toml" && -f "${W}/kubelet/config.yaml" ]] ||
    die "the local cluster was never brought up here (no configuration in ${W}): run up first"
  check_version
}

# stop_component NAME: the stop timeouts are those of down, but the API server's: an outage is
# what the caller wants, and kube-apiserver drains its in-flight requests on SIGTERM for up to
# half a minute, still answering the calls it holds.
stop_component() {
  component_preflight
  case "$1" in
    etcd) stop etcd 15 ;;
    kube-apiserver) stop kube-apiserver 5 ;;
    kube-controller-manager | kube-scheduler | criproxy | apiforward | localpv | kwok) stop "$1" ;;
    containerd) stop containerd 15 ;;
    kubelet) stop kubelet 30 ;;
    # The proxy first, as down does: its clients lose their connection, not only their calls.
    runtime) stop criproxy; stop containerd 15 ;;
    *) die "unknown component '$1': want one of ${COMPONENTS}" ;;
  esac
}

# start_component NAME: a no-op apart from the health wait when NAME already runs.
start_component() {
  component_preflight
  case "$1" in
    etcd) start_etcd ;;
    kube-apiserver) start_apiserver ;;
    apiforward) start_apiforward ;;
    kube-controller-manager)
      start_controller_manager
      wait_for "kube-controller-manager /healthz" 60 curl -skf --max-time 2 https://127.0.0.1:10257/healthz ||
        die "kube-controller-manager not healthy: see ${LOGS}/kube-controller-manager.log"
      ;;
    kube-scheduler)
      start_scheduler
      wait_for "kube-scheduler /healthz" 60 curl -skf --max-time 2 https://127.0.0.1:10259/healthz ||
        die "kube-scheduler not healthy: see ${LOGS}/kube-scheduler.log"
      ;;
    containerd) start_containerd ;;
    criproxy) start_criproxy ;;
    runtime) start_containerd; start_criproxy ;;
    localpv) start_localpv ;;
    kwok) network_up; start_kwok ;;
    kubelet)
      local ip
      ip=$(node_ip)
      [[ -n "${ip}" ]] || die "no global IPv4 address found for the node IP"
      start_kubelet "${ip}"
      ;;
    *) die "unknown component '$1': want one of ${COMPONENTS}" ;;
  esac
}

usage() {
  echo "usage: $0 up|down|status|env|stop COMPONENT|start COMPONENT" >&2
  echo "       COMPONENT: ${COMPONENTS}" >&2
  exit 2
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  env) echo "export KUBECONFIG=${KUBECONFIG} KUBECACHEDIR=${KUBECACHEDIR} PATH=${K8S_BIN}:\$PATH" ;;
  stop) [[ $# == 2 ]] || usage; stop_component "$2" ;;
  start) [[ $# == 2 ]] || usage; start_component "$2" ;;
  *) usage ;;
esac
