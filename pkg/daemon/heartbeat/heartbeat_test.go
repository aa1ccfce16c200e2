package heartbeat

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/contract/daemonlease"
	"github.com/nodekruise/kruise/pkg/daemon/kube/clientset"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	ns   = "kruise-system"
	node = "n1"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func testNode() *corev1.Node { return gen.Node(node, gen.SetNodeUID("node-uid")) }

func getLease(t *testing.T, c *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), daemonlease.Name(node), metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

func TestRenew(t *testing.T) {
	old := metav1.NewMicroTime(t0.Add(-time.Minute))
	existing := gen.Lease(daemonlease.Name(node), gen.SetLeaseNamespace(ns), gen.SetLeaseResourceVersion("7"), gen.SetLeaseHolder("someone"),
		gen.SetLeaseAcquireTime(old.Time), gen.SetLeaseRenewTime(old.Time))
	conflictOnce := func(c *fake.Clientset) {
		n := 0
		c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			n++
			if n == 1 {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, daemonlease.Name(node), errors.New("changed"))
			}
			return false, nil, nil
		})
	}
	alreadyExistsOnce := func(c *fake.Clientset) {
		c.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			// Someone else created it between our Get and Create.
			require.NoError(t, c.Tracker().Add(existing.DeepCopy()))
			return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, daemonlease.Name(node))
		})
	}
	tests := []struct {
		name        string
		objects     []runtime.Object
		react       func(*fake.Clientset)
		wantErr     bool
		wantOwner   bool
		wantAcquire time.Time
	}{
		{name: "creates a missing lease owned by the node", objects: []runtime.Object{testNode()}, wantOwner: true, wantAcquire: t0},
		{name: "creates without owner when the node cannot be read", wantAcquire: t0},
		{name: "renews an existing lease and adds the owner", objects: []runtime.Object{testNode(), existing.DeepCopy()}, wantOwner: true, wantAcquire: old.Time},
		{name: "retries a conflict", objects: []runtime.Object{testNode(), existing.DeepCopy()}, react: conflictOnce, wantOwner: true, wantAcquire: old.Time},
		{name: "retries when created concurrently", objects: []runtime.Object{testNode()}, react: alreadyExistsOnce, wantOwner: true, wantAcquire: old.Time},
		{name: "reports other errors", objects: []runtime.Object{testNode()}, wantErr: true, react: func(c *fake.Clientset) {
			c.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "leases"}, "x", errors.New("no"))
			})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			c := fake.NewClientset(tc.objects...)
			if tc.react != nil {
				tc.react(c)
			}
			h := New(clientset.New(c), node, ns, clocktesting.NewFakeClock(t0))
			err := h.Renew(ctx)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			l := getLease(t, c)
			assert.Equal(t, node, ptr.Deref(l.Spec.HolderIdentity, ""))
			assert.Equal(t, int32(40), ptr.Deref(l.Spec.LeaseDurationSeconds, 0))
			require.NotNil(t, l.Spec.RenewTime)
			assert.True(t, l.Spec.RenewTime.Time.Equal(t0), "renewTime %v", l.Spec.RenewTime)
			require.NotNil(t, l.Spec.AcquireTime)
			assert.True(t, l.Spec.AcquireTime.Time.Equal(tc.wantAcquire), "acquireTime %v", l.Spec.AcquireTime)
			if tc.wantOwner {
				require.Len(t, l.OwnerReferences, 1)
				assert.Equal(t, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node, UID: "node-uid"}, l.OwnerReferences[0])
			} else {
				assert.Empty(t, l.OwnerReferences)
			}
		})
	}
}

// A renewal after a successful write updates the Lease without reading it
// first; after a conflict it reads it again.
func TestRenewReadsOnlyAfterConflict(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	c := fake.NewClientset(testNode())
	clk := clocktesting.NewFakeClock(t0)
	h := New(clientset.New(c), node, ns, clk)
	gets := func() int {
		n := 0
		for _, a := range c.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "leases" {
				n++
			}
		}
		return n
	}
	require.NoError(t, h.Renew(ctx)) // creates it
	assert.Equal(t, 1, gets())
	clk.Step(daemonlease.RenewInterval)
	require.NoError(t, h.Renew(ctx))
	assert.Equal(t, 1, gets(), "a renewal after our own write must not read the Lease")
	assert.True(t, getLease(t, c).Spec.RenewTime.Time.Equal(t0.Add(daemonlease.RenewInterval)))

	n := 0
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if n++; n == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, daemonlease.Name(node), errors.New("changed"))
		}
		return false, nil, nil
	})
	clk.Step(daemonlease.RenewInterval)
	before := gets() // getLease above reads it too
	require.NoError(t, h.Renew(ctx))
	assert.Equal(t, before+1, gets(), "a conflict must make the retry read the Lease")
	assert.True(t, getLease(t, c).Spec.RenewTime.Time.Equal(t0.Add(2*daemonlease.RenewInterval)))
}

// Run renews at once, then on every tick of the clock, and keeps going after
// a failed renewal.
func TestRunRenewsEveryInterval(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	c := fake.NewClientset(testNode())
	fail := make(chan bool, 1)
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case <-fail:
			return true, nil, apierrors.NewServiceUnavailable("down")
		default:
			return false, nil, nil
		}
	})
	clk := clocktesting.NewFakeClock(t0)
	h := New(clientset.New(c), node, ns, clk)
	done := make(chan struct{})
	go func() {
		h.Run(ctx)
		close(done)
	}()
	waitForTimer := func() {
		t.Helper()
		for !clk.HasWaiters() {
			select {
			case <-done:
				t.Fatal("Run returned")
			default:
				goruntime.Gosched() // Run is about to wait on the clock
			}
		}
	}
	waitForTimer()
	assert.True(t, getLease(t, c).Spec.RenewTime.Time.Equal(t0))

	fail <- true
	clk.Step(daemonlease.RenewInterval)
	waitForTimer()
	assert.True(t, getLease(t, c).Spec.RenewTime.Time.Equal(t0), "failed renewal changed the lease")

	clk.Step(daemonlease.RenewInterval)
	waitForTimer()
	assert.True(t, getLease(t, c).Spec.RenewTime.Time.Equal(t0.Add(2*daemonlease.RenewInterval)))

	cancel()
	<-done
}
