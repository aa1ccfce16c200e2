//go:build e2e

package disruptive

import (
	"testing"
	"time"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The rollouts behind controller gates that are off by default. Each gate needs kruise-controller
// restarted with it (and restarted again after), which every test on the cluster sees: one
// restart turns all of them on, and the rollouts, each in its own namespace with its own fresh
// image, run side by side. None of the gates acts on another's objects: a pre-download job
// selects only its workload's pods, and a PodUnavailableBudget only its own pods.
func TestRolloutsUnderGates(t *testing.T) {
	ctx := framework.Context(t, 25*time.Minute)
	framework.New(t).SetControllerFeatureGates(ctx, t, map[string]bool{
		"PodUnavailableBudgetUpdateGate":     true,
		"PreDownloadImageForInPlaceUpdate":   true,
		"PreDownloadImageForDaemonSetUpdate": true,
	})
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"CloneSetPreDownloadImage", cloneSetPreDownloadImage},
		{"DaemonSetPreDownloadImage", daemonSetPreDownloadImage},
		{"CloneSetInPlaceRolloutWaitsForTheBudget", cloneSetInPlaceRolloutWaitsForTheBudget},
		{"StatefulSetInPlaceRolloutWaitsForTheBudget", statefulSetInPlaceRolloutWaitsForTheBudget},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}
