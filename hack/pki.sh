#!/usr/bin/env bash
# Creates the local cluster's certificates and keys with openssl (idempotent: existing files stay).
# Usage: hack/pki.sh DIR NODE_NAME NODE_IP BRIDGE_IP
# BRIDGE_IP is the host's address on the pod bridge, where pods reach the API server (through
# hack/tools/tcpforward): the API server's certificate names it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir="$1" node="$2" node_ip="$3" bridge_ip="$4"
mkdir -p "${dir}"
cd "${dir}"
umask 077

new_key() { [[ -f "$1.key" ]] || openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null; }

# new_ca NAME CN
new_ca() {
  [[ -f "$1.crt" ]] && return
  new_key "$1"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 3650 -sha256 -out "$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
}

# new_cert NAME CA SUBJECT USAGE [SAN]   (USAGE: clientAuth, serverAuth or both)
new_cert() {
  local name="$1" ca="$2" subj="$3" usage="$4" san="${5:-}"
  [[ -f "${name}.crt" ]] && return
  new_key "${name}"
  openssl req -new -key "${name}.key" -subj "${subj}" -out "${name}.csr"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=${usage}"
    [[ -n "${san}" ]] && echo "subjectAltName=${san}"
  } >"${name}.ext"
  openssl x509 -req -in "${name}.csr" -CA "${ca}.crt" -CAkey "${ca}.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "${name}.ext" -out "${name}.crt" 2>/dev/null
  rm -f "${name}.csr" "${name}.ext"
}

new_ca ca kruise-local-ca
new_ca front-proxy-ca kruise-local-front-proxy-ca

# A certificate made before the bridge address was added to it is made again (the API server reads
# it at start).
if [[ -f apiserver.crt ]] && ! openssl x509 -in apiserver.crt -noout -ext subjectAltName | grep -q "IP Address:${bridge_ip}\b"; then
  rm -f apiserver.crt
fi
new_cert apiserver ca "/CN=kube-apiserver" serverAuth \
  "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:${node},IP:127.0.0.1,IP:10.0.0.1,IP:${bridge_ip}"
new_cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
new_cert admin ca "/O=system:masters/CN=kubernetes-admin" clientAuth
new_cert controller-manager ca "/CN=system:kube-controller-manager" clientAuth
new_cert scheduler ca "/CN=system:kube-scheduler" clientAuth
new_cert kubelet-client ca "/O=system:nodes/CN=system:node:${node}" clientAuth
new_cert kubelet-serving ca "/CN=${node}" serverAuth "DNS:${node},DNS:localhost,IP:127.0.0.1,IP:${node_ip}"
new_cert front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth

# Service-account token signing key pair.
[[ -f sa.key ]] || openssl genrsa -out sa.key 2048 2>/dev/null
[[ -f sa.pub ]] || openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
rm -f ./*.srl
