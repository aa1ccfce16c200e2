// Command kruise-daemon runs on every node (a DaemonSet) and carries out
// node-level work through the node's container runtime (CRI).
package main

import (
	"context"
	"os"

	"github.com/spf13/pflag"

	"github.com/nodekruise/kruise/pkg/daemon"
	"github.com/nodekruise/kruise/pkg/process/cli"
)

func main() {
	o := daemon.NewOptions()
	cmd := cli.NewCommand(cli.Component{
		Name:  "kruise-daemon",
		Short: "Node agent of kruise: acts on this node's containers through the CRI",
		Long: `kruise-daemon runs on every node as a DaemonSet. It connects to the node's
container runtime (containerd, CRI-O or cri-dockerd) over the CRI v1 gRPC API and
watches only objects that concern its own node.

The node name comes from $NODE_NAME (set it from spec.nodeName with the downward
API) or --node-name. The runtime socket is --runtime-endpoint, or
unix://<host-run-dir>/<socket-file> with --socket-file (OpenKruise's flag, e.g.
k3s/containerd/containerd.sock); with neither it is found by probing, in order,
containerd/containerd.sock, containerd.sock, crio/crio.sock, crio.sock and
cri-dockerd.sock under --host-run-dir; the first socket that answers CRI Version
is used.

Endpoints on --addr (default :10223, not OpenKruise's 10221, so that it can start
beside OpenKruise's daemon on the host network; unix:///abs/path serves them on a
unix socket):
  /healthz         the process is alive
  /readyz          the runtime answered CRI Version recently, the node informer has
                   synced and the node exists, no other node daemon runs on the node,
                   the CRR and the NodeImage informers have synced (?verbose lists each
                   check and the runtime)
  /metrics         Prometheus metrics, including kruise_daemon_cri_up,
                   kruise_daemon_runtime_info{runtime,version} and
                   kruise_feature_enabled{name}

"kruise-daemon probe [--addr=ADDR] [--timeout=3s] [PATH]" GETs PATH (default
/healthz, or /readyz) once and exits 0 on a 2xx answer: an exec probe.

--feature-gates takes OpenKruise's gate names (KruiseDaemon, SidecarTerminator,
ImagePullJobGate, InPlaceUpdateEnvFromMetadata; OpenKruise's other gates are
accepted and ignored with a warning), so that one string can be passed to both
binaries.

With InPlaceUpdateEnvFromMetadata (default on) it restarts, once, the containers
whose env from pod labels or annotations an in-place update has changed,
comparing with the env the runtime recorded (CRI ContainerStatus, verbose);
nothing is exec'd in the container.

It executes the ContainerRecreateRequests admitted for its node (--crr-workers
pods in parallel): preStop hook, StopContainer, then it waits for the kubelet's
new instance to be running and ready. Every 10s it renews the Lease
kruise-daemon-<node> in its namespace (--namespace, else $POD_NAMESPACE), by which
the controller knows the node has a live daemon.

Unless the environment sets GOGC, the daemon runs with GOGC=25: its live heap is
small and most of Go's default headroom would be resident memory on every node.

SIGTERM or SIGINT stops the daemon gracefully.`,
		AddFlags: func(fs *pflag.FlagSet) { o.AddFlags(fs) },
		Run:      func(ctx context.Context) error { return daemon.RunProcess(ctx, o) },
	})
	os.Exit(cli.Main(cmd))
}
