package daemon

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/daemon/coexist"
	"github.com/nodekruise/kruise/pkg/daemon/heartbeat"
)

// components are the parts of kruise-daemon, in the order they are built
// and started; they stop in reverse order. A new daemon feature is one more
// entry here: it takes its clients, informers (node-scoped and shared, see
// env), Event recorder and metrics registry from env, and the container
// runtime from the cri component listed before it. Whatever acts on the node
// is gated: it waits until no other node daemon runs here.
var components = []entry{
	// Connects to the runtime (retrying up to --runtime-wait) and asks it
	// for its version every --cri-probe-interval.
	{name: "cri", readyz: true, starting: "not connected to a container runtime yet", build: buildCRI},
	{name: "node", readyz: true, build: buildNode},
	// Its gate holds the gated components back while another node daemon
	// runs here; its run stops the daemon when one appears.
	{name: coexist.CheckName, readyz: true, gated: true, build: buildCoexistence},
	// Before the CRR executor, so that it stops after it: the Lease is
	// renewed while the executor finishes the CRRs under way.
	{name: "heartbeat", gated: true, on: withHeartbeat, build: buildHeartbeat},
	{name: "crr", readyz: true, gated: true, on: withKruise, build: buildCRRExecutor},
	// Restarts, once, the containers whose env from pod labels or
	// annotations an in-place update has made out of date (feature gate
	// InPlaceUpdateEnvFromMetadata). It needs no apps.kruise.io client.
	{name: "envrestart", gated: true, on: withEnvRestart, build: buildEnvRestarter},
	{name: "imagepull", readyz: true, gated: true, on: withKruise, build: buildImagePuller},
	// Runs the probes of this node's NodePodProbe (PodProbeMarkers,
	// enhanced liveness) and reports their results in its status.
	{name: "podprobe", readyz: true, gated: true, on: withNodeProbes, build: buildNodeProber},
}

// withKruise is on when the apps.kruise.io client is there (tests leave it
// out).
func withKruise(e *env) bool { return e.kruiseClient != nil }

// withHeartbeat is on when the heartbeat has a clock (tests leave it out).
func withHeartbeat(e *env) bool { return e.heartbeatClock != nil }

// buildNode watches this daemon's own Node: the node check passes while it
// exists.
func buildNode(ctx context.Context, e *env) (*component, error) {
	nodes, err := newNodeWatch(e.client, e.opts.NodeName, klog.FromContext(ctx))
	if err != nil {
		return nil, err
	}
	return &component{
		informers: []informer{{name: "node", syncer: nodes.informer}},
		check:     nodes,
		// Says once whether the node is there; the check keeps saying it.
		run: func(ctx context.Context) error {
			logger := klog.FromContext(ctx)
			if err := nodes.Check(nil); err != nil {
				logger.Info("Node informer synced but the node is not ready for us", "reason", err.Error())
			} else {
				logger.Info("Node informer synced", "node", nodes.name)
			}
			return nil
		},
	}, nil
}

// buildCoexistence makes the guard that keeps the daemon from acting while
// another node daemon (OpenKruise's, or another kruise DaemonSet's) runs on
// the node. It reads the node's pods through the shared pod informer.
func buildCoexistence(ctx context.Context, e *env) (*component, error) {
	guard := coexist.New(coexist.Config{Node: e.opts.NodeName, Namespace: e.pod.Namespace, Name: e.pod.Name, Recorder: e.recorder})
	pods := e.nodePods()
	if err := guard.Watch(ctx, pods); err != nil {
		return nil, err
	}
	return &component{
		informers: []informer{{name: "pods", syncer: pods}},
		check:     guard,
		gate:      guard.WaitAlone,
		run:       guard.StopOnConflict,
	}, nil
}

// buildHeartbeat renews the node's Lease, which tells kruise-controller
// that this node has a live daemon to carry out its CRRs; so it starts, as
// the CRR executor does, once the CRR informers have synced. Its failures
// are logged and never stop the daemon.
func buildHeartbeat(_ context.Context, e *env) (*component, error) {
	hb := heartbeat.New(e.client, e.opts.NodeName, e.opts.Namespace, e.heartbeatClock)
	var informers []informer
	if withKruise(e) {
		informers = e.crrInformers()
	}
	return &component{
		informers: informers,
		run: func(ctx context.Context) error {
			hb.Run(ctx)
			return nil
		},
	}, nil
}
