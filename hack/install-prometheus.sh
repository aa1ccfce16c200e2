#!/usr/bin/env bash
# Puts promtool and prometheus into the cache and prints promtool's path (prometheus is next to
# it). They come from Debian's prometheus package, unpacked without installing it (no maintainer
# scripts, no service, no user): apt-get download, then dpkg-deb -x into
# ${KRUISE_CACHE}/prometheus/<package version>/, keeping usr/bin only. Where apt has no such
# package, promtool alone is built from the Prometheus Go module (PROMTOOL_GO_VERSION) instead;
# PROMTOOL_SOURCE=debian or go insists on one. Idempotent: a cached version is reused.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROMTOOL_GO_VERSION="${PROMTOOL_GO_VERSION:-v0.316.0}"
# auto: the Debian package, else the Go module; debian or go: only that one.
PROMTOOL_SOURCE="${PROMTOOL_SOURCE:-auto}"

# The version apt would download; empty when apt knows no prometheus package.
candidate() {
  command -v apt-cache >/dev/null || return 0
  apt-cache policy prometheus 2>/dev/null | sed -n 's/^ *Candidate: *//p' | grep -v '^(none)$' || true
}

from_debian() {
  local version="$1" dir="${KRUISE_CACHE}/prometheus/${1}"
  if [[ -x "${dir}/usr/bin/promtool" && -x "${dir}/usr/bin/prometheus" ]]; then
    log "promtool ${version} (Debian package): cached"
    echo "${dir}/usr/bin/promtool"
    return 0
  fi
  local tmp
  tmp=$(mktemp -d)
  # apt's download sandbox user (_apt) must be able to write the directory.
  chmod 0777 "${tmp}"
  log "promtool ${version} (Debian package): downloading and unpacking"
  if ! (cd "${tmp}" && apt-get download -qq "prometheus=${version}" >/dev/null 2>&1); then
    rm -rf "${tmp}"
    return 1
  fi
  dpkg-deb -x "${tmp}"/prometheus_*.deb "${tmp}/root" || { rm -rf "${tmp}"; return 1; }
  rm -rf "${dir}" && mkdir -p "${dir}/usr"
  mv "${tmp}/root/usr/bin" "${dir}/usr/bin"
  rm -rf "${tmp}"
  "${dir}/usr/bin/promtool" --version >/dev/null 2>&1 || { rm -rf "${dir}"; return 1; }
  echo "${dir}/usr/bin/promtool"
}

from_go() {
  local dir="${KRUISE_CACHE}/prometheus/go-${PROMTOOL_GO_VERSION}"
  if [[ -x "${dir}/usr/bin/promtool" ]]; then
    log "promtool ${PROMTOOL_GO_VERSION} (Go module): cached"
  else
    log "promtool ${PROMTOOL_GO_VERSION} (Go module): building (a few minutes on first run)"
    mkdir -p "${dir}/usr/bin"
    CGO_ENABLED=0 GOFLAGS="-trimpath" GOBIN="${dir}/usr/bin" \
      go install "github.com/prometheus/prometheus/cmd/promtool@${PROMTOOL_GO_VERSION}" ||
      die "promtool ${PROMTOOL_GO_VERSION} did not build"
  fi
  echo "${dir}/usr/bin/promtool"
}

[[ "${PROMTOOL_SOURCE}" =~ ^(auto|debian|go)$ ]] || die "PROMTOOL_SOURCE must be auto, debian or go, not ${PROMTOOL_SOURCE}"
if [[ "${PROMTOOL_SOURCE}" == go ]]; then
  from_go
  exit 0
fi
version=$(candidate)
if [[ -z "${version}" && $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  # A fresh machine may not have read its package lists yet.
  apt-get update -qq >/dev/null 2>&1 || true
  version=$(candidate)
fi
if [[ -n "${version}" ]] && from_debian "${version}"; then
  exit 0
fi
[[ "${PROMTOOL_SOURCE}" == auto ]] || die "no usable Debian prometheus package${version:+ (${version} failed)}"
log "promtool: no usable Debian prometheus package${version:+ (${version} failed)}; using the Go module"
from_go
