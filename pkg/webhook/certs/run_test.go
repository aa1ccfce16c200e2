package certs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

const waitFor = 10 * time.Second
const tick = 5 * time.Millisecond

// start runs r's Manager until the test ends and returns a function that
// stops it and waits for Run to return.
func start(t *testing.T, r *replica) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(waitFor):
			t.Error("Run did not return after its context ended")
		}
	}
	t.Cleanup(stop)
	return stop
}

// watching waits until r's clientset has opened a watch on resource.
func watching(t *testing.T, r *replica, resource string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, a := range r.client.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == resource {
				return true
			}
		}
		return false
	}, waitFor, tick, "no watch on %s", resource)
}

func TestCheckFailsBeforeTheFirstCheck(t *testing.T) {
	r := newReplica(t, newCluster(t, targets()...), newClock())
	assert.EqualError(t, r.Check(nil), "webhook certificates not checked yet")
	assert.Equal(t, "webhook-certificates", r.Name())
	_, err := r.GetCertificate(nil)
	assert.Error(t, err)
	assert.Nil(t, r.CABundle())
}

func TestRunRestoresAnOverwrittenBundleOnItsWatchAndRenewsOnTime(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk, func(cfg *Config) { cfg.CertValidity, cfg.Resync = time.Hour, 24*time.Hour })
	stop := start(t, r)

	require.Eventually(t, func() bool { return r.Check(nil) == nil }, waitFor, tick)
	watching(t, r, "mutatingwebhookconfigurations")
	bundle := string(r.CABundle())

	// Someone overwrites a caBundle: the watch brings a check, no clock step.
	mc := c.mutating(t)
	mc.Webhooks[0].ClientConfig.CABundle = []byte("someone else's CA")
	_, err := c.first.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(context.Background(), mc, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.bundles(t)["mutating/mpod.kb.io"] == bundle }, waitFor, tick)

	// The serving certificate is renewed when its renewal point comes.
	first := r.served(t)
	require.Eventually(t, clk.HasWaiters, waitFor, tick)
	clk.SetTime(renewAt(first))
	require.Eventually(t, func() bool {
		cert, err := r.GetCertificate(nil)
		return err == nil && cert.Leaf.SerialNumber.Cmp(first.SerialNumber) != 0
	}, waitFor, tick)
	assert.Equal(t, c.secret(t).Data[ServerCertKey], pemOf(t, r.served(t)))
	assert.NoError(t, r.Check(nil))
	stop()
}

func TestRunInExternalModeRecoversWhenTheSecretAppears(t *testing.T) {
	iss := newIssuer(t)
	c := newCluster(t, injected(iss.ca.certPEM)...)
	r := newReplica(t, c, newClock(), external)
	start(t, r)

	require.Eventually(t, func() bool { return r.Status().Synced }, waitFor, tick)
	require.Error(t, r.Check(nil))
	watching(t, r, "secrets")

	_, err := c.first.CoreV1().Secrets(testNS).Create(context.Background(),
		externalSecret(iss.secretData(t, t0.Add(-time.Hour), 90*24*time.Hour)), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.Check(nil) == nil }, waitFor, tick)
	assert.Empty(t, r.writes())
}

func TestBackoffAfterFailedChecks(t *testing.T) {
	resync := 5 * time.Second
	backoff := time.Duration(0)
	var waits []time.Duration
	for _, failed := range []bool{true, true, true, true, false, true} {
		var wait time.Duration
		wait, backoff = nextWait(resync, failed, backoff, resync)
		waits = append(waits, wait)
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, resync, resync, time.Second}, waits)
	wait, _ := nextWait(200*time.Millisecond, true, 0, resync)
	assert.Equal(t, 200*time.Millisecond, wait, "a renewal due sooner than the backoff comes first")
}

// A check that failed (here: the Secret cannot be created) is retried by
// Run until it succeeds.
func TestRunRetriesAFailedCheck(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newCluster(t, targets()...)
	r := newReplica(t, c, clk)
	var failing atomic.Bool
	failing.Store(true)
	r.client.PrependReactor("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
		}
		return false, nil, nil
	})
	start(t, r)
	require.Eventually(t, func() bool { return r.Status().Synced }, waitFor, tick)
	assert.ErrorContains(t, r.Check(nil), "Secret kruise-system/kruise-webhook-certs: creating the Secret: etcd leader changed")
	failing.Store(false)
	require.Eventually(t, func() bool {
		if clk.HasWaiters() {
			clk.Step(time.Second)
		}
		return r.Check(nil) == nil
	}, waitFor, tick)
}
