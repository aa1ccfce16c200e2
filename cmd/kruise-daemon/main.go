// Command kruise-daemon runs on every node (a DaemonSet) and carries out
// node-level work through the node's container runtime (CRI).
package main

import (
	"context"
	"os"

	"github.com/spf13/pflag"

	"github.com/nodekruise/kruise/pkg/daemon"
	"github.com/nodekruise/kruise/pkg/options"
)

func main() {
	o := daemon.NewOptions()
	cmd := options.NewCommand(options.Component{
		Name:  "kruise-daemon",
		Short: "Node agent of kruise: acts on this node's containers through the CRI",
		Long: `kruise-daemon runs on every node as a DaemonSet. It connects to the node's
container runtime (containerd, CRI-O or cri-dockerd) over the CRI v1 gRPC API and
watches only objects that concern its own node.

The node name comes from $NODE_NAME (set it from spec.nodeName with the downward
API) or --node-name. Without --runtime-endpoint the runtime socket is found by
probing, in order, containerd/containerd.sock, containerd.sock, crio/crio.sock,
crio.sock and cri-dockerd.sock under --host-run-dir; the first socket that answers
CRI Version is used.

Endpoints on --addr:
  /healthz         the process is alive
  /readyz          the runtime answered CRI Version recently, the node informer has
                   synced and the node exists, the CRR informers have synced (?verbose lists each check and the runtime)
  /metrics         Prometheus metrics, including kruise_daemon_cri_up and
                   kruise_daemon_runtime_info{runtime,version}

It executes the ContainerRecreateRequests admitted for its node (--crr-workers
pods in parallel): preStop hook, StopContainer, then it waits for the kubelet's
new instance to be running and ready. Every 10s it renews the Lease
kruise-daemon-<node> in its namespace (--namespace, else $POD_NAMESPACE), by which
the controller knows the node has a live daemon.

SIGTERM or SIGINT stops the daemon gracefully.`,
		AddFlags: func(fs *pflag.FlagSet) { o.AddFlags(fs) },
		Run:      func(ctx context.Context) error { return daemon.Run(ctx, o) },
	})
	os.Exit(options.Main(cmd))
}
