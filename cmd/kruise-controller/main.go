// Command kruise-controller is kruise's central, leader-elected controller
// manager (a Deployment).
package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodekruise/kruise/pkg/controller"
	"github.com/nodekruise/kruise/pkg/process/cli"
)

func main() {
	os.Exit(cli.Main(newCommand()))
}

func newCommand() *cobra.Command {
	o := controller.NewOptions()
	cmd := cli.NewCommand(cli.Component{
		Name:  "kruise-controller",
		Short: "Central controller manager of kruise",
		Long: `kruise-controller makes the cluster-level decisions of kruise and writes the
objects the node daemons act on. Run it as a Deployment; with --leader-elect (the
default) replicas compete for a coordination.k8s.io Lease and only the leader runs
controllers. A leader that cannot renew its lease (the API server out of reach, say)
stops its controllers and campaigns again in the same process, as a standby; it exits
with status 1 only if the controllers do not stop within --shutdown-grace-period, so
that two sets of controllers never act at once.

The Lease namespace comes from --leader-elect-resource-namespace, else $POD_NAMESPACE
(set it from metadata.namespace with the downward API), else kruise-system.

Endpoints on --addr (host:port, or unix:///abs/path for a unix socket, e.g. in an
emptyDir, so that hostNetwork replicas on one node need no TCP port of their own):
  /healthz         the process is alive and, when leading, renewing its lease
  /readyz          the API server has answered (?verbose lists each check)
  /metrics         Prometheus metrics, including leader_election_master_status and
                   kruise_feature_enabled{name}

"kruise-controller probe [--addr=ADDR] [--timeout=3s] [PATH]" GETs PATH (default
/healthz, or /readyz) once and exits 0 on a 2xx answer: the exec probe for a unix
socket, e.g. kruise-controller probe --addr=unix:///run/kruise/controller.sock /readyz

Feature gates (--feature-gates, OpenKruise's names; OpenKruise's other gates are
accepted and ignored with a warning):
  KruiseDaemon=true       kruise-daemon runs on the nodes; false turns off every
                          controller that needs it (all below but the sidecar
                          terminator) and forbids --sidecar-termination=crr
  SidecarTerminator=true  the Job sidecar terminator (OpenKruise defaults it to false)
  ImagePullJobGate=true   ImagePullJob, ImageListPullJob and pull secrets, with
                          KruiseDaemon (OpenKruise defaults it to false)
  EnableExternalCerts=false
                          with --webhook-enabled: the webhook certificates are
                          cert-manager's (Secret kruise-webhook-certs: ca.crt, tls.crt,
                          tls.key) and kruise writes no caBundle, only verifies

Controllers (gates):
  containerrecreaterequest  (KruiseDaemon) admits ContainerRecreateRequests (labels,
                            statusContext, preStop, ports) or completes bad ones with a
                            message; ends them at activeDeadlineSeconds, when the pod is
                            gone or when the node's daemon stops renewing Lease
                            kruise-daemon-<node>; sets and restores the KruisePodReady
                            readiness gate; deletes them ttlSecondsAfterFinished after
                            completion
  podreadiness              sets KruisePodReady True on pods that declare that readiness
                            gate and have no such condition yet
  sidecarterminator         (SidecarTerminator) stops the sidecars of Job pods whose
                            main containers have finished (--sidecar-termination)
  nodeimage                 (KruiseDaemon) keeps one NodeImage per node
  pullsecrets, imagepulljob, imagelistpulljob
                            (ImagePullJobGate, KruiseDaemon) fan image pre-pulls out to
                            the NodeImages, with copies of their pull secrets
  launchpriority            releases container launch priorities: creates each pod's
                            <pod>-barrier ConfigMap and adds key p_<n> once the
                            containers of higher priority are Ready

Webhooks (--webhook-enabled, the chart's webhook.enabled; off by default): every
replica, leader or not, serves HTTPS on --webhook-addr (:9876) behind Service
kruise-webhook-service: /mutate-pod (container launch priority: adds the
KRUISE_CONTAINER_BARRIER env vars) and /convert (CRD conversion). It keeps the
certificates in Secret kruise-webhook-certs and the CA in the webhook configurations,
and /readyz fails until the certificate is valid and trusted there.

SIGTERM or SIGINT stops the controllers, waits for their workers, then releases the
lease and exits 0 (non-zero, leaving the lease to expire, if the workers do not stop
within --shutdown-grace-period).`,
		AddFlags: func(fs *pflag.FlagSet) { o.AddFlags(fs) },
		Run:      func(ctx context.Context) error { return controller.Run(ctx, o) },
	})
	cmd.AddCommand(controller.NewResetConversionCommand())
	cmd.AddCommand(controller.NewSetupConversionCommand())
	return cmd
}
