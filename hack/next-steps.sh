#!/usr/bin/env bash
# Printed at the end of `make run`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cat <<MSG

kruise is running on the local cluster.

  export KUBECONFIG=${KRUISE_WORK}/admin.kubeconfig KUBECACHEDIR=${KRUISE_WORK}/kube-cache
  export PATH=${K8S_BIN}:\$PATH

  kubectl -n kruise-system get pods -o wide          # both components Ready
  kubectl -n kruise-system logs ds/kruise-daemon     # the runtime the daemon found
  kubectl get crd | grep kruise.io                   # the apps.kruise.io API
  kubectl explain containerrecreaterequest.spec      # field documentation
  curl -s 127.0.0.1:10223/metrics | grep kruise_     # daemon metrics (host network)
  kubectl kruise rollout status cloneset/NAME        # the kubectl-kruise plugin (docs/cli.md)

  docs/tour.md tries every feature on this cluster, step by step.

  make test     # unit, integration and e2e tests
  make status   # what runs
  make down     # stop everything and clean up
MSG
