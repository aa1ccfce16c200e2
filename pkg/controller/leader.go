package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	// leader_election_master_status and friends, in component-base's process-wide registry.
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
)

// ErrLeadershipLost is returned when this replica could not renew its lease
// and its controllers have stopped; it may campaign again.
var ErrLeadershipLost = errors.New("lost leadership: could not renew the leader-election lease")

// ErrControllersStuck is returned when leadership was lost and the
// controllers did not stop in time: the process must exit rather than run a
// second set beside them.
var ErrControllersStuck = errors.New("lost leadership")

// PodNameEnv is filled from metadata.name by the downward API.
const PodNameEnv = "POD_NAME"

// Identity is this replica's name in the Lease: its pod name ($POD_NAME; the
// hostname is the node's on the host network, the same for every replica
// there), else the hostname, plus a random suffix, so a restarted pod never
// mistakes the old holder's lease for its own.
func Identity() (string, error) {
	if pod := os.Getenv(PodNameEnv); pod != "" {
		return pod + "_" + string(uuid.NewUUID()), nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading hostname for the leader-election identity: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// leaderRun holds one leader-election session.
type leaderRun struct {
	opts     *Options
	leases   coordinationv1.LeasesGetter
	identity string
	watchdog *leaderelection.HealthzAdaptor
	// lead runs while this replica leads; its ctx ends when leadership does or shutdown begins.
	lead func(ctx context.Context) error
}

// run blocks until ctx is cancelled, the controllers fail or the lease is lost.
//
// On shutdown (ctx cancelled) the controllers are stopped first while the lease is still held
// and renewed; once they have returned (their workers have finished their current keys) the
// lease is released and run returns nil. If they do not return within the shutdown grace the
// lease is left to expire, so that no other replica leads while they may still act, and run
// returns an error. When the controllers fail, their error is returned after the lease is
// released. When the lease is lost, run returns ErrLeadershipLost once the controllers have
// stopped; if they do not stop within the shutdown grace, an error wrapping
// ErrControllersStuck that must end the process, since a new term would run beside them.
func (l *leaderRun) run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if ctx.Err() != nil {
		return nil
	}
	// The election outlives ctx: it is stopped below, once the controllers have.
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()

	t := &leadership{started: make(chan struct{}), done: make(chan struct{})}
	lock := l.newLock()
	le, err := l.elector(ctx, lock, t, stopElecting)
	if err != nil {
		return err
	}

	logger.Info("Waiting to acquire the leader-election lease", "lease", klog.KRef(l.opts.LeaseNamespace, l.opts.LeaseName),
		"identity", l.identity)
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		le.Run(electCtx)
	}()
	// le.Run returns on its own only when the lease is lost, or when the controllers failed
	// (stopElecting in serve).
	lost := false
	select {
	case <-ctx.Done():
	case <-elected:
		lost = true // unless the controllers failed: see below
	}
	if !isClosed(t.started) {
		// A standby stops campaigning. The campaign may win meanwhile: then the controllers
		// are being started, and are stopped below like a leader's.
		stopElecting()
		<-elected
	}
	leading := isClosed(t.started) || lock.wrote.Load()
	stoppedInTime := !leading || l.awaitControllers(ctx, t.done)
	// Stop renewing. Until now the lease was renewed, so no other replica could lead while the
	// controllers were stopping.
	stopElecting()
	<-elected
	if !leading {
		logger.Info("Leader election stopped on shutdown", "led", false)
		return nil
	}
	var ctrlErr error
	if isClosed(t.done) {
		ctrlErr = t.err
	}
	return l.end(ctx, endingOf(stoppedInTime, lost && ctrlErr == nil, ctx.Err() != nil), lock.LeaseLock, ctrlErr)
}

// leadership is this replica's leadership, if it wins one.
type leadership struct {
	started chan struct{} // closed when the controllers start
	done    chan struct{} // closed when they have returned
	err     error         // their failure; written before done is closed
}

// newLock is the lease this replica campaigns for, noting its writes.
func (l *leaderRun) newLock() *writeNotingLock {
	return &writeNotingLock{LeaseLock: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: l.opts.LeaseName, Namespace: l.opts.LeaseNamespace},
		Client:     l.leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
	}}
}

// elector configures the election whose leader runs the controllers for the leadership t.
func (l *leaderRun) elector(ctx context.Context, lock resourcelock.Interface, t *leadership, stopElecting func()) (*leaderelection.LeaderElector, error) {
	logger := klog.FromContext(ctx)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: l.opts.LeaseDuration,
		RenewDeadline: l.opts.RenewDeadline,
		RetryPeriod:   l.opts.RetryPeriod,
		// client-go would release the lease as soon as the election is stopped, while the
		// controllers may still be finishing their work: release it here, after they stop.
		ReleaseOnCancel: false,
		Name:            l.opts.LeaseName,
		WatchDog:        l.watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) { l.serve(ctx, leadCtx, t, stopElecting) },
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != l.identity {
					logger.Info("Another replica leads; standing by", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("configuring leader election: %w", err)
	}
	if l.watchdog != nil {
		l.watchdog.SetLeaderElection(le)
	}
	return le, nil
}

// serve runs the controllers for the leadership t until leadership ends or
// shutdown (ctx) begins; their failure ends the election too.
func (l *leaderRun) serve(ctx, leadCtx context.Context, t *leadership, stopElecting func()) {
	defer close(t.done)
	close(t.started)
	ctrlCtx, cancel := context.WithCancel(leadCtx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	klog.FromContext(ctx).Info("Became leader, starting controllers", "identity", l.identity)
	if err := l.lead(ctrlCtx); err != nil {
		t.err = err
		stopElecting()
	}
}

// awaitControllers waits up to the shutdown grace for the controllers to
// return (done), the lease still held, and says whether they did.
func (l *leaderRun) awaitControllers(ctx context.Context, done <-chan struct{}) bool {
	logger := klog.FromContext(ctx)
	logger.Info("Stopping the controllers; the lease is kept until they have stopped", "shutdown", ctx.Err() != nil)
	stopStart := time.Now()
	timer := time.NewTimer(l.opts.ShutdownGrace)
	defer timer.Stop()
	select {
	case <-done:
		logger.Info("Controllers stopped", "after", time.Since(stopStart))
		return true
	case <-timer.C:
		logger.Info("Controllers did not stop within the grace period", "grace", l.opts.ShutdownGrace)
		return false
	}
}

// ending is how a term that was led ends.
type ending int

const (
	// endStuck: the lease was lost and the controllers did not stop: the process must exit.
	endStuck ending = iota
	// endUnreleased: shutdown, and the controllers did not stop: the lease is left to expire.
	endUnreleased
	// endLostOnShutdown: the lease was lost while shutting down: nothing more to do.
	endLostOnShutdown
	// endLost: the lease was lost; this replica may campaign again.
	endLost
	// endRelease: the controllers stopped (or failed) with the lease held: release it.
	endRelease
)

// endingOf decides how a led term ends from whether the controllers stopped
// within the grace, whether the lease was lost (rather than given up on a
// failure of the controllers) and whether shutdown began. The lease is
// released only when nothing can still act under it.
func endingOf(stoppedInTime, lost, shuttingDown bool) ending {
	switch {
	case !stoppedInTime && lost:
		return endStuck
	case !stoppedInTime:
		return endUnreleased
	case lost && shuttingDown:
		return endLostOnShutdown
	case lost:
		return endLost
	}
	return endRelease
}

// end carries out the ending e of a led term: it says why run returns and
// releases the lease when e says so. ctrlErr is the controllers' failure.
func (l *leaderRun) end(ctx context.Context, e ending, lock *resourcelock.LeaseLock, ctrlErr error) error {
	logger := klog.FromContext(ctx)
	switch e {
	case endStuck:
		return fmt.Errorf("%w, and the controllers did not stop within %s", ErrControllersStuck, l.opts.ShutdownGrace)
	case endUnreleased:
		logger.Info("Not releasing the lease while the controllers may still act: it expires on its own",
			"leaseDuration", l.opts.LeaseDuration)
		return fmt.Errorf("shutting down: the controllers did not stop within %s, so the lease was not released", l.opts.ShutdownGrace)
	case endLostOnShutdown:
		logger.Info("Leader election stopped on shutdown, after the lease was lost")
		return nil
	case endLost:
		return ErrLeadershipLost
	}
	l.release(ctx, lock)
	if ctrlErr != nil {
		return ctrlErr
	}
	logger.Info("Leader election stopped on shutdown", "led", true)
	return nil
}

// release gives up the lease if it still names this replica, so that a standby takes over at
// its next attempt rather than when the lease expires. The write is conditional on the
// resourceVersion just read: a lease another replica has taken meanwhile is left alone.
func (l *leaderRun) release(ctx context.Context, lock *resourcelock.LeaseLock) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.RenewDeadline)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		logger.Error(err, "Could not read the lease to release it; it expires on its own", "lease", lock.Describe())
		return
	}
	if rec.HolderIdentity != l.identity {
		logger.Info("Lease no longer held; nothing to release", "holder", rec.HolderIdentity)
		return
	}
	now := metav1.NewTime(time.Now())
	err = lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions:    rec.LeaderTransitions,
		LeaseDurationSeconds: 1,
		AcquireTime:          now,
		RenewTime:            now,
	})
	if err != nil {
		logger.Error(err, "Could not release the lease; it expires on its own", "lease", lock.Describe())
		return
	}
	logger.Info("Released the leader-election lease", "lease", lock.Describe(), "identity", l.identity)
}

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// writeNotingLock notes whether the elector has written the lease. client-go starts the leader
// callback exactly when its campaign has written the lease (created or taken it over), so after
// the elector has returned this tells whether the callback was started, even if it has not run
// yet.
type writeNotingLock struct {
	*resourcelock.LeaseLock
	wrote atomic.Bool
}

func (w *writeNotingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := w.LeaseLock.Create(ctx, ler)
	if err == nil {
		w.wrote.Store(true)
	}
	return err
}

func (w *writeNotingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := w.LeaseLock.Update(ctx, ler)
	if err == nil {
		w.wrote.Store(true)
	}
	return err
}
