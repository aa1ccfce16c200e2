// Command kruise-controller is kruise's central, leader-elected controller
// manager (a Deployment).
package main

import (
	"context"
	"os"

	"github.com/spf13/pflag"

	"github.com/nodekruise/kruise/pkg/controller"
	"github.com/nodekruise/kruise/pkg/options"
)

func main() {
	o := controller.NewOptions()
	cmd := options.NewCommand(options.Component{
		Name:  "kruise-controller",
		Short: "Central controller manager of kruise",
		Long: `kruise-controller makes the cluster-level decisions of kruise and writes the
objects the node daemons act on. Run it as a Deployment; with --leader-elect (the
default) replicas compete for a coordination.k8s.io Lease and only the leader runs
controllers. A leader that cannot renew its lease exits with status 1 so that it is
restarted as a standby.

The Lease namespace comes from --leader-elect-resource-namespace, else $POD_NAMESPACE
(set it from metadata.namespace with the downward API), else kruise-system.

Endpoints on --addr:
  /healthz         the process is alive and, when leading, renewing its lease
  /readyz          the API server has answered (?verbose lists each check)
  /metrics         Prometheus metrics, including leader_election_master_status

Controllers:
  containerrecreaterequest  admits ContainerRecreateRequests (labels, statusContext,
                            preStop, ports) or completes bad ones with a message; ends
                            them at activeDeadlineSeconds, when the pod is gone or when the
                            node's daemon stops renewing Lease kruise-daemon-<node>; sets
                            and restores the KruisePodReady readiness gate; deletes them
                            ttlSecondsAfterFinished after completion

SIGTERM or SIGINT stops the controllers, releases the lease and exits 0.`,
		AddFlags: func(fs *pflag.FlagSet) { o.AddFlags(fs) },
		Run:      func(ctx context.Context) error { return controller.Run(ctx, o) },
	})
	os.Exit(options.Main(cmd))
}
