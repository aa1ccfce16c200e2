package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/unit/gen"
)

var tCoexist = time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)

// managerLease is OpenKruise's leader-election Lease in ns, renewed age
// before tCoexist by holder (no holder when empty).
func managerLease(ns, holder string, age time.Duration, durationSeconds *int32) *coordv1.Lease {
	renewed := tCoexist.Add(-age)
	mods := []gen.LeaseModifier{gen.SetLeaseNamespace(ns), gen.SetLeaseAcquireTime(renewed), gen.SetLeaseRenewTime(renewed)}
	if durationSeconds != nil {
		mods = append(mods, gen.SetLeaseDurationSeconds(*durationSeconds))
	}
	if holder != "" {
		mods = append(mods, gen.SetLeaseHolder(holder))
	}
	return gen.Lease(openKruiseLeaseName, mods...)
}

func managerLeaseGets(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "leases" {
			n++
		}
	}
	return n
}

func TestOpenKruiseLeaseLive(t *testing.T) {
	acquiredOnly := managerLease("kruise-system", "okm_1", 10*time.Second, ptr.To[int32](15))
	acquiredOnly.Spec.RenewTime = nil
	noTimes := managerLease("kruise-system", "okm_1", 0, nil)
	noTimes.Spec.RenewTime, noTimes.Spec.AcquireTime = nil, nil

	cases := []struct {
		name  string
		lease *coordv1.Lease
		want  bool
	}{
		{name: "renewed just now", lease: managerLease("kruise-system", "okm_1", 0, ptr.To[int32](15)), want: true},
		{name: "renewed within duration", lease: managerLease("kruise-system", "okm_1", 14*time.Second, ptr.To[int32](15)), want: true},
		{name: "late but within slack", lease: managerLease("kruise-system", "okm_1", 19*time.Second, ptr.To[int32](15)), want: true},
		{name: "expired past slack", lease: managerLease("kruise-system", "okm_1", 20*time.Second, ptr.To[int32](15)), want: false},
		{name: "long duration", lease: managerLease("kruise-system", "okm_1", 50*time.Second, ptr.To[int32](60)), want: true},
		{name: "no duration: 15s default", lease: managerLease("kruise-system", "okm_1", 19*time.Second, nil), want: true},
		{name: "no duration, expired", lease: managerLease("kruise-system", "okm_1", 21*time.Second, nil), want: false},
		{name: "released (no holder)", lease: managerLease("kruise-system", "", 0, ptr.To[int32](1)), want: false},
		{name: "acquired, never renewed", lease: acquiredOnly, want: true},
		{name: "no times", lease: noTimes, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newOpenKruiseGuard(nil, nil, clocktesting.NewFakeClock(tCoexist))
			got := g.live("kruise-system", tc.lease)
			assert.Equal(t, tc.want, got != nil, "%v", got)
		})
	}
}

func TestOpenKruiseLeaseNamespaces(t *testing.T) {
	cases := []struct {
		name      string
		leaseName string
		leaseNS   string
		elect     bool
		own       string
		want      []string
	}{
		{name: "default install", leaseName: DefaultLeaseName, leaseNS: "kruise-system", elect: true, own: "kruise-system", want: []string{"kruise-system"}},
		{name: "own namespace", leaseName: DefaultLeaseName, leaseNS: "kruise", elect: true, own: "kruise", want: []string{"kruise-system", "kruise"}},
		{name: "our Lease is called kruise-manager", leaseName: openKruiseLeaseName, leaseNS: "kruise", elect: true, own: "kruise", want: []string{"kruise-system"}},
		{name: "our kruise-manager Lease in kruise-system", leaseName: openKruiseLeaseName, leaseNS: "kruise-system", elect: true, own: "kruise-system"},
		{name: "no leader election", leaseName: openKruiseLeaseName, leaseNS: "kruise-system", own: "kruise-system", want: []string{"kruise-system"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{LeaderElect: tc.elect, LeaseName: tc.leaseName, LeaseNamespace: tc.leaseNS}
			assert.Equal(t, tc.want, openKruiseLeaseNamespaces(o, tc.own))
		})
	}
}

func TestOpenKruiseGuardNoManager(t *testing.T) {
	cases := []struct {
		name   string
		leases []runtime.Object
	}{
		{name: "no Lease"},
		{name: "expired Lease", leases: []runtime.Object{managerLease("kruise-system", "okm_1", time.Hour, ptr.To[int32](15))}},
		{name: "released Lease", leases: []runtime.Object{managerLease("kruise", "", 0, ptr.To[int32](1))}},
		{name: "live Lease elsewhere", leases: []runtime.Object{managerLease("other", "okm_1", 0, ptr.To[int32](15))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset(tc.leases...)
			g := newOpenKruiseGuard(client.CoordinationV1(), []string{"kruise-system", "kruise"}, clocktesting.NewFakeClock(tCoexist))
			require.ErrorContains(t, g.Check(nil), "not yet checked whether OpenKruise's kruise-manager runs")
			require.NoError(t, g.wait(ctx))
			assert.NoError(t, g.Check(nil))
			assert.Equal(t, 2, managerLeaseGets(client), "one GET per namespace, once")
		})
	}
}

func TestOpenKruiseGuardWaitsWhileManagerRuns(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(tCoexist)
	client := fake.NewClientset(managerLease("kruise", "kruise-manager-7d9_abc", 3*time.Second, ptr.To[int32](15)))
	g := newOpenKruiseGuard(client.CoordinationV1(), []string{"kruise-system", "kruise"}, clk)

	done := make(chan error, 1)
	go func() { done <- g.wait(ctx) }()
	waitForTimer(t, clk)
	err := g.Check(nil)
	require.Error(t, err)
	assert.Equal(t, `OpenKruise's kruise-manager runs: its leader-election Lease kruise/kruise-manager is held by "kruise-manager-7d9_abc", `+
		`renewed 3s ago; kruise-controller does not start while it runs: uninstall OpenKruise (e.g. helm uninstall kruise -n kruise), `+
		`kruise replaces it; checking again every 10s`, err.Error())
	assert.Equal(t, 2, managerLeaseGets(client))

	// Still renewed: still waiting, one more look per namespace per 10s.
	lease := managerLease("kruise", "kruise-manager-7d9_abc", -10*time.Second, ptr.To[int32](15))
	_, err = client.CoordinationV1().Leases("kruise").Update(ctx, lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	clk.Step(openKruiseRecheck)
	waitForTimer(t, clk)
	require.Error(t, g.Check(nil))
	assert.Equal(t, 4, managerLeaseGets(client), "two more GETs")

	// OpenKruise is uninstalled: its Lease stops being renewed and expires.
	clk.Step(openKruiseRecheck + 15*time.Second)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return once the Lease expired")
	}
	assert.NoError(t, g.Check(nil))
	gets := managerLeaseGets(client)
	assert.False(t, clk.HasWaiters(), "no timer left: no more GETs")
	assert.Equal(t, gets, managerLeaseGets(client))
}

func TestOpenKruiseGuardErrors(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(tCoexist)
	client := fake.NewClientset()
	failures := 1
	client.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
		if a.GetNamespace() == "kruise-system" {
			return true, nil, apierrors.NewForbidden(gr, openKruiseLeaseName, errors.New("RBAC"))
		}
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewServiceUnavailable("apiserver is restarting")
		}
		return false, nil, nil
	})
	g := newOpenKruiseGuard(client.CoordinationV1(), []string{"kruise-system", "kruise"}, clk)
	done := make(chan error, 1)
	go func() { done <- g.wait(ctx) }()

	waitForTimer(t, clk)
	assert.ErrorContains(t, g.Check(nil), "reading Lease kruise/kruise-manager to tell whether OpenKruise's kruise-manager runs: apiserver is restarting")
	clk.Step(openKruiseRecheck)
	select {
	case err := <-done:
		require.NoError(t, err, "Forbidden in one namespace is skipped, NotFound in the other is clear")
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return")
	}
	assert.NoError(t, g.Check(nil))
}

func TestOpenKruiseGuardCancelled(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	clk := clocktesting.NewFakeClock(tCoexist)
	client := fake.NewClientset(managerLease("kruise-system", "okm_1", 0, ptr.To[int32](15)))
	g := newOpenKruiseGuard(client.CoordinationV1(), []string{"kruise-system"}, clk)
	done := make(chan error, 1)
	go func() { done <- g.wait(ctx) }()
	waitForTimer(t, clk)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return on cancel")
	}
	assert.Error(t, g.Check(nil), "never ready while OpenKruise runs")
}

// waitForTimer waits until the guard sleeps on the fake clock.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond, "the guard did not wait for its next look")
}
