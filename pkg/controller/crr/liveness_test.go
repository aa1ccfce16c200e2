package crr

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// renewed is the Lease after one more renewal written with the node's clock.
func renewed(l *coordinationv1.Lease, nodeTime time.Time) *coordinationv1.Lease {
	c := l.DeepCopy()
	c.Spec.RenewTime = ptr.To(metav1.NewMicroTime(nodeTime))
	return c
}

// A daemon's liveness is judged on the controller's clock, by when it saw
// the Lease renewed: a node clock 40 s behind (or an hour ahead) changes
// nothing, in either direction.
func TestLivenessIgnoresTheNodeClock(t *testing.T) {
	for _, skew := range []time.Duration{-40 * time.Second, -time.Hour, time.Hour, 0} {
		t.Run(skew.String(), func(t *testing.T) {
			f := newFixture(t, objects{pods: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{admittedCRR(time.Hour)}})
			nodeNow := func() time.Time { return f.clock.Now().Add(skew) }
			l := lease(nodeName, 0)
			l = renewed(l, nodeNow())
			f.ctrl.leaseChanged(l) // seen renewed now

			after, err := f.sync(t)
			require.NoError(t, err)
			assert.Equal(t, daemonLiveFor, after, "live for a lease duration from when it was seen")
			assert.Empty(t, f.writes())

			// Renewed every 10 s for two minutes: live all along.
			for range 12 {
				f.clock.Step(10 * time.Second)
				l = renewed(l, nodeNow())
				f.ctrl.leaseChanged(l)
				_, err := f.sync(t)
				require.NoError(t, err)
				require.Empty(t, f.writes(), "completed although the daemon renews its Lease")
			}

			// It stops renewing: not live once a lease duration has passed
			// since the last renewal seen; the informer's resync of the
			// same Lease is no renewal.
			f.clock.Step(daemonLiveFor - time.Second)
			f.ctrl.leaseChanged(l.DeepCopy())
			after, err = f.sync(t)
			require.NoError(t, err)
			assert.Equal(t, time.Second, after)
			f.clock.Step(time.Second)
			_, err = f.sync(t)
			require.NoError(t, err)
			assert.Equal(t, `no live kruise-daemon on node "node-a"`, f.getCRR(t).Status.Message)
		})
	}
}

// A deleted Lease is forgotten; a Lease that is not a daemon's is ignored.
func TestLivenessObserve(t *testing.T) {
	f := newFixture(t, objects{})
	l := lease(nodeName, 0)
	f.ctrl.leaseChanged(l)
	assert.Equal(t, now.Add(daemonLiveFor), f.ctrl.liveness.liveUntil(nodeName))

	other := lease(nodeName, 0)
	other.Name = "kruise-controller"
	f.ctrl.leaseChanged(other)
	assert.Len(t, f.ctrl.liveness.seen, 1)

	f.ctrl.leaseDeleted(cache.DeletedFinalStateUnknown{Key: "kruise-system/" + l.Name, Obj: l})
	assert.True(t, f.ctrl.liveness.liveUntil(nodeName).IsZero())
}
