package controller

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func testOptions() *Options {
	o := NewOptions()
	o.Addr = "127.0.0.1:0"
	o.LeaseNamespace = "kruise-system"
	// Retries are fast so tests are quick; the renew deadline leaves a loaded CI machine seconds
	// of scheduling delay before a healthy leader would count as lost.
	o.LeaseDuration = 3 * time.Second
	o.RenewDeadline = 2 * time.Second
	o.RetryPeriod = 100 * time.Millisecond
	o.ShutdownGrace = 2 * time.Second
	return o
}

type running struct {
	base string
	stop context.CancelFunc
	done chan error
}

func start(t *testing.T, o *Options, client *fake.Clientset, ctrls ...*fakeController) *running {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	var builders []Entry
	for _, c := range ctrls {
		builders = append(builders, Entry{Name: c.name, Build: func(Deps) (Controller, error) { return c, nil }})
	}
	addrCh := make(chan net.Addr, 1)
	r := &running{stop: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- run(ctx, o, deps{
			client: client, leases: client.CoordinationV1(), identity: "test-replica_1234", builders: builders,
			listening: func(a net.Addr) { addrCh <- a },
		})
	}()
	select {
	case a := <-addrCh:
		r.base = "http://" + a.String()
	case err := <-r.done:
		t.Fatalf("controller exited before listening: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("controller did not start listening")
	}
	t.Cleanup(cancel)
	return r
}

func (r *running) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(r.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("controller did not return")
		return nil
	}
}

func lease(t *testing.T, client *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := client.CoordinationV1().Leases("kruise-system").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

func TestLeaderRunsControllersAndReleasesOnShutdown(t *testing.T) {
	client := fake.NewClientset()
	c := newFake("sidecarterminator")
	r := start(t, testOptions(), client, c)

	require.Eventually(t, func() bool { return c.started.Load() == 1 }, 10*time.Second, 10*time.Millisecond,
		"controllers start once leadership is won")
	l := lease(t, client)
	require.NotNil(t, l.Spec.HolderIdentity)
	assert.Equal(t, "test-replica_1234", *l.Spec.HolderIdentity)

	require.Eventually(t, func() bool { code, _ := r.get(t, "/readyz"); return code == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	_, body := r.get(t, "/readyz?verbose")
	assert.Contains(t, body, "[+]apiserver ok")
	assert.Contains(t, body, "[+]leaderElection ok")
	code, _ := r.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	_, metrics := r.get(t, "/metrics")
	assert.Contains(t, metrics, `leader_election_master_status{name="kruise-controller"} 1`)

	r.stop()
	require.NoError(t, r.wait(t), "SIGTERM is a clean exit")
	l = lease(t, client)
	assert.True(t, l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "", "lease released on shutdown")
}

// leaseLog records, in order, what the test's controller and the fake API server's lease
// writes did.
type leaseLog struct {
	mu     sync.Mutex
	events []string
}

func (l *leaseLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *leaseLog) count(e string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.events {
		if x == e {
			n++
		}
	}
	return n
}

func (l *leaseLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// recordLeaseWrites logs each lease update the fake API server receives: "renewed by <holder>"
// or "released".
func recordLeaseWrites(client *fake.Clientset, log *leaseLog) {
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
			log.add("renewed by " + h)
		} else {
			log.add("released")
		}
		return false, nil, nil
	})
}

// On SIGTERM the controllers are stopped first; a worker still finishing its key keeps the
// lease held (and renewed) by this replica, and the lease is released only once it returns, so
// a standby never leads while the old leader still acts.
func TestShutdownReleasesTheLeaseOnlyAfterTheWorkersStopped(t *testing.T) {
	client := fake.NewClientset()
	log := &leaseLog{}
	recordLeaseWrites(client, log)
	c := newFake("x")
	c.draining, c.drain = make(chan struct{}), make(chan struct{})
	c.returned = func() { log.add("worker returned") }
	r := start(t, testOptions(), client, c)
	require.Eventually(t, func() bool { return c.started.Load() == 1 }, 10*time.Second, 10*time.Millisecond)

	r.stop()
	select {
	case <-c.draining:
	case <-time.After(10 * time.Second):
		t.Fatal("the controller's context did not end on shutdown")
	}
	// The worker is still busy: the lease stays this replica's, renewed every retry period.
	renewals := log.count("renewed by test-replica_1234")
	require.Eventually(t, func() bool { return log.count("renewed by test-replica_1234") >= renewals+3 }, 10*time.Second, 10*time.Millisecond,
		"the lease is renewed while the worker finishes: %v", log.all())
	assert.Zero(t, log.count("released"), "the lease was released while the worker still ran: %v", log.all())
	assert.Equal(t, "test-replica_1234", ptr.Deref(lease(t, client).Spec.HolderIdentity, ""))
	select {
	case err := <-r.done:
		t.Fatalf("the process exited while a worker still ran: %v", err)
	default:
	}

	close(c.drain)
	require.NoError(t, r.wait(t), "SIGTERM is a clean exit")
	events := log.all()
	returned, released := slices.Index(events, "worker returned"), slices.Index(events, "released")
	require.NotEqual(t, -1, released, "the lease is released once the worker has returned: %v", events)
	assert.Less(t, returned, released, "released only after the worker returned: %v", events)
	assert.Equal(t, 1, log.count("released"), "%v", events)
	assert.Equal(t, "released", events[len(events)-1], "no renewal after the release: %v", events)
	l := lease(t, client)
	assert.Empty(t, ptr.Deref(l.Spec.HolderIdentity, ""), "lease released on shutdown")
	assert.EqualValues(t, 1, ptr.Deref(l.Spec.LeaseDurationSeconds, 0), "a released lease expires at once")
}

// A worker that does not finish within the shutdown grace keeps the lease from being released:
// the process exits and the lease expires on its own, later, rather than a standby leading
// beside a worker that may still act.
func TestShutdownWithWorkersStuckDoesNotRelease(t *testing.T) {
	client := fake.NewClientset()
	log := &leaseLog{}
	recordLeaseWrites(client, log)
	c := newFake("x")
	c.draining, c.drain = make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(c.drain) })
	r := start(t, testOptions(), client, c)
	require.Eventually(t, func() bool { return c.started.Load() == 1 }, 10*time.Second, 10*time.Millisecond)

	r.stop()
	err := r.wait(t)
	require.Error(t, err, "controllers that do not stop in time fail the shutdown")
	assert.ErrorContains(t, err, "did not stop within 2s")
	assert.Zero(t, log.count("released"), "%v", log.all())
	assert.Equal(t, "test-replica_1234", ptr.Deref(lease(t, client).Spec.HolderIdentity, ""), "the lease is left to expire")
}

func TestStandbyWaitsForTheLease(t *testing.T) {
	other := "other-replica_abcd"
	now := time.Now()
	client := fake.NewClientset(gen.Lease(DefaultLeaseName, gen.SetLeaseNamespace("kruise-system"), gen.SetLeaseHolder(other),
		gen.SetLeaseDurationSeconds(3600), gen.SetLeaseAcquireTime(now), gen.SetLeaseRenewTime(now)))
	c := newFake("x")
	r := start(t, testOptions(), client, c)

	require.Eventually(t, func() bool { code, _ := r.get(t, "/readyz"); return code == http.StatusOK }, 5*time.Second, 10*time.Millisecond,
		"a standby is ready (healthy, waiting)")
	// Several acquisition attempts have seen the other holder's lease...
	require.Eventually(t, func() bool { return leaseGets(client) >= 3 }, 10*time.Second, 10*time.Millisecond,
		"the standby keeps trying to acquire the lease")
	// ...and none of them started a controller.
	assert.EqualValues(t, 0, c.started.Load(), "standby must not run controllers")
	r.stop()
	require.NoError(t, r.wait(t))
	assert.Equal(t, other, *lease(t, client).Spec.HolderIdentity, "standby must not touch the leader's lease")
}

// refuseLeaseUpdates makes the fake API server fail lease renewals while refuse is set, as
// when it is out of reach.
func refuseLeaseUpdates(client *fake.Clientset) *atomic.Bool {
	var refuse atomic.Bool
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, errors.New("etcd unavailable")
		}
		return false, nil, nil
	})
	return &refuse
}

func TestLosingLeadershipStopsControllersAndCampaignsAgain(t *testing.T) {
	client := fake.NewClientset()
	refuse := refuseLeaseUpdates(client)
	c := newFake("x")
	r := start(t, testOptions(), client, c)
	require.Eventually(t, func() bool { return c.started.Load() == 1 }, 10*time.Second, 10*time.Millisecond)

	// The API server refuses lease renewals: the controllers stop...
	refuse.Store(true)
	require.Eventually(t, func() bool { return c.stopped.Load() == 1 }, 10*time.Second, 10*time.Millisecond,
		"controllers stop when the lease cannot be renewed")
	assert.EqualValues(t, 1, c.started.Load(), "no new term while the lease cannot be renewed")
	// ...and once it answers again, the same process leads again, with
	// controllers built afresh, without exiting.
	refuse.Store(false)
	require.Eventually(t, func() bool { return c.started.Load() == 2 }, 10*time.Second, 10*time.Millisecond,
		"leadership is won again in-process")
	select {
	case err := <-r.done:
		t.Fatalf("the process exited on losing leadership: %v", err)
	default:
	}
	assert.Equal(t, "test-replica_1234", *lease(t, client).Spec.HolderIdentity)
	_, metrics := r.get(t, "/metrics")
	assert.Contains(t, metrics, `leader_election_master_status{name="kruise-controller"} 1`)
	r.stop()
	require.NoError(t, r.wait(t))
}

func TestControllersThatDoNotStopEndTheProcess(t *testing.T) {
	client := fake.NewClientset()
	refuse := refuseLeaseUpdates(client)
	c := newFake("x")
	c.stuck = make(chan struct{})
	t.Cleanup(func() { close(c.stuck) })
	r := start(t, testOptions(), client, c)
	require.Eventually(t, func() bool { return c.started.Load() == 1 }, 10*time.Second, 10*time.Millisecond)

	refuse.Store(true)
	err := r.wait(t)
	require.ErrorIs(t, err, ErrControllersStuck, "a second term must never run beside controllers still running")
	assert.EqualValues(t, 1, c.started.Load())
}

// A controller that registers metrics is built again for each term; the new term's collector
// replaces the old one instead of failing the build.
func TestMetricsReregisteredOnANewTerm(t *testing.T) {
	reg := prometheus.NewRegistry()
	rr := reregisterer{reg}
	first := prometheus.NewCounter(prometheus.CounterOpts{Name: "kruise_test_total", Help: "test"})
	require.NoError(t, rr.Register(first))
	first.Add(3)
	second := prometheus.NewCounter(prometheus.CounterOpts{Name: "kruise_test_total", Help: "test"})
	require.NoError(t, rr.Register(second))
	second.Inc()
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, 1)
	assert.Equal(t, 1.0, families[0].GetMetric()[0].GetCounter().GetValue(), "the new term's counter is served")
	assert.NotPanics(t, func() {
		rr.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "kruise_test_total", Help: "test"}))
	})
}

func TestControllerFailureExits(t *testing.T) {
	client := fake.NewClientset()
	c := newFake("x")
	r := start(t, testOptions(), client, c)
	require.Eventually(t, func() bool { return c.started.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	c.fail <- errors.New("boom")
	err := r.wait(t)
	require.Error(t, err)
	assert.ErrorContains(t, err, `controller "x" failed: boom`)
	l := lease(t, client)
	assert.True(t, l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "", "lease released so a standby takes over at once")
}

func TestWithoutLeaderElection(t *testing.T) {
	client := fake.NewClientset()
	o := testOptions()
	o.LeaderElect = false
	c := newFake("x")
	r := start(t, o, client, c)
	require.Eventually(t, func() bool { return c.started.Load() == 1 }, 5*time.Second, 10*time.Millisecond)
	_, body := r.get(t, "/readyz?verbose")
	assert.NotContains(t, body, "leaderElection")
	r.stop()
	require.NoError(t, r.wait(t))
	_, err := client.CoordinationV1().Leases("kruise-system").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
	assert.Error(t, err, "no lease without leader election")
}

func TestNotReadyUntilAPIServerAnswers(t *testing.T) {
	old := apiServerPollInterval
	apiServerPollInterval = 20 * time.Millisecond
	t.Cleanup(func() { apiServerPollInterval = old })

	client := fake.NewClientset()
	var down atomic.Bool
	down.Store(true)
	client.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	o := testOptions()
	o.LeaderElect = false
	r := start(t, o, client)
	code, body := r.get(t, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.True(t, strings.Contains(body, "[-]apiserver failed"), body)

	down.Store(false)
	require.Eventually(t, func() bool { code, _ := r.get(t, "/readyz"); return code == http.StatusOK }, 5*time.Second, 10*time.Millisecond,
		"ready once the API server answered")
	r.stop()
	require.NoError(t, r.wait(t))
}

func TestValidate(t *testing.T) {
	o := NewOptions()
	require.NoError(t, o.Validate())
	o.LeaseDuration = 5 * time.Second
	o.RenewDeadline = 10 * time.Second
	o.Workers = 0
	err := o.Validate()
	require.Error(t, err)
	assert.ErrorContains(t, err, "--leader-elect-lease-duration (5s) must be greater than --leader-elect-renew-deadline (10s)")
	assert.ErrorContains(t, err, "--workers must be at least 1")

	t.Setenv(PodNamespaceEnv, "custom-ns")
	assert.Equal(t, "custom-ns", NewOptions().LeaseNamespace)
	t.Setenv(PodNamespaceEnv, "")
	assert.Equal(t, DefaultNamespace, NewOptions().LeaseNamespace)
}

func TestIdentityIsUnique(t *testing.T) {
	a, err := Identity()
	require.NoError(t, err)
	b, err := Identity()
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.Contains(t, a, "_")

	t.Setenv(PodNameEnv, "kruise-controller-7d9f-x2b4q")
	c, err := Identity()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(c, "kruise-controller-7d9f-x2b4q_"), "the pod name, not the node's hostname: %s", c)
}

func TestRunWithoutClusterConfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	err := Run(context.Background(), NewOptions())
	assert.ErrorContains(t, err, "neither --kubeconfig nor $KUBECONFIG is set")
}

// leaseGets counts the lease reads the fake API server has answered: one per acquisition attempt.
func leaseGets(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "leases" {
			n++
		}
	}
	return n
}
