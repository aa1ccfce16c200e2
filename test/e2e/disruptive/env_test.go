//go:build e2e

package disruptive

import (
	"context"
	"testing"
	"time"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// What every test of this package starts from: its clients, a namespace of its own, the node and
// the timeouts of a daemon brought back after a fault.
const (
	// faultJobTimeout bounds an ImagePullJob from creation to completion: a handful of attempts
	// of a tiny image with the daemon's backoff of 2 s, 4 s, 8 s, 16 s between them.
	faultJobTimeout = 3 * time.Minute
	// faultRestartTimeout bounds a kill of the daemon's container → the daemon Ready again. The
	// kubelet restarts a container that dies for the first time at once, but one that died
	// within the last 10 minutes only after its crash-loop backoff (10 s, 20 s, 40 s, ... up to
	// 5 minutes; other disruptive tests stop the daemon too); then the readiness probe must pass.
	faultRestartTimeout = 6 * time.Minute
	// faultDaemonContainer is the daemon's container in deploy/.
	faultDaemonContainer = "daemon"
	// faultBlobs is how many blobs framework.PushImage's images have: a config and one layer.
	faultBlobs = 2
)

type faultEnv struct {
	f    *framework.Framework
	c    versioned.Interface
	rt   cri.Runtime
	ns   string
	node string
}

func faultNewEnv(ctx context.Context, t *testing.T, prefix string) *faultEnv {
	t.Helper()
	f := framework.New(t)
	return &faultEnv{f: f, c: f.KruiseClient(t), rt: framework.CRI(ctx, t), ns: f.NewNamespace(ctx, t, prefix), node: framework.NodeName()}
}
