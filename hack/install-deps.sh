#!/usr/bin/env bash
# Installs the Debian packages the local cluster needs. Idempotent: does nothing when all are present.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The shellcheck package is for `make verify` (hack/verify.sh), and tmux for the e2e test of
# `kubectl kruise rollout status` in a real terminal; neither is for the cluster.
PKGS=(containerd runc containernetworking-plugins busybox-static iproute2 openssl curl ca-certificates shellcheck tmux)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${p}")
done
if ((${#missing[@]} == 0)); then
  log "debian packages: all present"
  exit 0
fi
[[ $(id -u) == 0 ]] || die "installing ${missing[*]} needs root"
log "debian packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's containerd package may try to start its own daemon; we run our own instance only.
