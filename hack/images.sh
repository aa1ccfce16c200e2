#!/usr/bin/env bash
# Builds OCI images without Docker (hack/tools/mkimage, go-containerregistry) and puts them where
# the local cluster gets them.
#
#   hack/images.sh local-node   the pause image into containerd, busybox test images into the registry
#   hack/images.sh kruise       kruise-daemon and kruise-controller images into the registry
#   hack/images.sh archives     the same two images as OCI and Docker archives in _output/images,
#                               named ${KRUISE_IMAGE_REPO}/kruise-{daemon,controller}:${KRUISE_IMAGE_TAG},
#                               for pushing to another cluster's registry with the tool of your choice
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MKIMAGE="${OUT_BIN}/mkimage"
IMAGES_DIR="${KRUISE_WORK}/images"
KRUISE_IMAGE_TAG="${KRUISE_IMAGE_TAG:-local}"

ctr_k8s() { ctr --address "${CTR_SOCK}" --namespace k8s.io "$@"; }

push() { "${MKIMAGE}" --insecure "$@"; }

local_node() {
  mkdir -p "${IMAGES_DIR}"
  # The sandbox image must be present before the first pod: import it rather than pull it.
  if ! ctr_k8s images ls -q | grep -qx "${PAUSE_IMAGE}"; then
    log "images: pause -> containerd (${PAUSE_IMAGE})"
    push --file "${OUT_BIN}/pause:/pause:0755" --entrypoint '["/pause"]' \
      --oci-archive "${IMAGES_DIR}/pause.tar" --push "${PAUSE_IMAGE}" >/dev/null
    ctr_k8s images import "${IMAGES_DIR}/pause.tar" >/dev/null
  fi
  local busybox=/bin/busybox
  log "images: busybox ${BUSYBOX_TAG} -> ${REGISTRY_ADDR}/{public,basic,token}/busybox"
  push --busybox "${busybox}" --cmd '["sh"]' --push "${REGISTRY_ADDR}/public/busybox:${BUSYBOX_TAG}" >/dev/null
  push --busybox "${busybox}" --cmd '["sh"]' --push "${REGISTRY_ADDR}/basic/busybox:${BUSYBOX_TAG}" \
    --username "${REGISTRY_USER}" --password "${REGISTRY_BASIC_PASSWORD}" >/dev/null
  push --busybox "${busybox}" --cmd '["sh"]' --push "${REGISTRY_ADDR}/token/busybox:${BUSYBOX_TAG}" \
    --username "${REGISTRY_USER}" --password "${REGISTRY_TOKEN_PASSWORD}" >/dev/null
  # The same busybox under another digest (another default command), for trying an in-place image
  # update (docs/cloneset.md).
  push --busybox "${busybox}" --cmd '["sh", "-i"]' --push "${REGISTRY_ADDR}/public/busybox:${BUSYBOX_TAG}-b" >/dev/null
  # Served to kruise-daemon by the test credential provider (hack/deploy.sh), not by pull secrets.
  push --busybox "${busybox}" --cmd '["sh"]' --push "${REGISTRY_ADDR}/basic/viaplugin/busybox:${BUSYBOX_TAG}" \
    --username "${REGISTRY_USER}" --password "${REGISTRY_BASIC_PASSWORD}" >/dev/null
}

build_kruise() {
  mkdir -p "${OUT_BIN}"
  # Stamped with the version, commit and the commit's date (not the time of the build, so that one
  # commit always gives the same binaries, the same digests and no needless rollout); KRUISE_VERSION
  # overrides the version.
  local stamp
  stamp=$(cd "${KRUISE_ROOT}" && go run ./hack/tools/buildinfo)
  log "building kruise binaries: ${stamp//-X github.com\/nodekruise\/kruise\/pkg\/version./}"
  local ld="-s -w ${stamp}"
  # grpcnotrace: gRPC's optional golang.org/x/net/trace support (off unless grpc.EnableTracing) links
  # html/template, whose reflective method calls keep every exported method of every type in the
  # binary: 57 -> 35 MB for kruise-daemon and 11 MB less resident (BENCHMARKS.md, "Daemon footprint").
  (cd "${KRUISE_ROOT}" && CGO_ENABLED=0 go build -trimpath -tags grpcnotrace -ldflags "${ld}" -o "${OUT_BIN}/" \
    ./cmd/kruise-daemon ./cmd/kruise-controller)
  # mkimage too: this checkout may not be the one that brought the cluster up (and built it).
  (cd "${KRUISE_ROOT}" && CGO_ENABLED=0 go build -trimpath -o "${OUT_BIN}/" ./hack/tools/mkimage)
}

kruise() {
  mkdir -p "${IMAGES_DIR}"
  build_kruise
  local c digest
  for c in kruise-daemon kruise-controller; do
    digest=$(push --file "${OUT_BIN}/${c}:/usr/local/bin/${c}:0755" --entrypoint "[\"/usr/local/bin/${c}\"]" \
      --push "${REGISTRY_ADDR}/public/${c}:${KRUISE_IMAGE_TAG}" | grep -o 'sha256:[0-9a-f]\{64\}' | tail -n 1)
    [[ -n "${digest}" ]] || die "pushing ${c} printed no digest"
    log "images: ${c} -> ${REGISTRY_ADDR}/public/${c}@${digest}"
    # deploy.sh pins the manifests to these digests so every rebuild rolls out.
    echo "${digest}" >"${IMAGES_DIR}/${c}.digest"
  done
}

archives() {
  build_kruise
  local repo="${KRUISE_IMAGE_REPO:-kruise}" dir="${KRUISE_ROOT}/_output/images" c
  mkdir -p "${dir}"
  for c in kruise-daemon kruise-controller; do
    "${MKIMAGE}" --file "${OUT_BIN}/${c}:/usr/local/bin/${c}:0755" --entrypoint "[\"/usr/local/bin/${c}\"]" \
      --name "${repo}/${c}:${KRUISE_IMAGE_TAG}" \
      --oci-archive "${dir}/${c}.oci.tar" --docker-archive "${dir}/${c}.docker.tar" >/dev/null
    log "images: ${repo}/${c}:${KRUISE_IMAGE_TAG} -> ${dir}/${c}.{oci,docker}.tar"
  done
}

case "${1:-}" in
  local-node) local_node ;;
  kruise) kruise ;;
  archives) archives ;;
  *) echo "usage: $0 local-node|kruise|archives" >&2; exit 2 ;;
esac
