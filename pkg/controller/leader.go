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
	// lead runs while this replica leads; its ctx ends when leadership does.
	lead func(ctx context.Context) error
}

// run blocks until ctx is cancelled (returns nil, after releasing the
// lease), the controllers fail (returns their error) or the lease is lost
// (returns ErrLeadershipLost once the controllers have stopped; if they do
// not stop within the shutdown grace, an error that must end the process,
// since a new term would run beside them).
func (l *leaderRun) run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)

	var led atomic.Bool
	leadDone := make(chan struct{})
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: l.opts.LeaseName, Namespace: l.opts.LeaseNamespace},
		Client:     l.leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   l.opts.LeaseDuration,
		RenewDeadline:   l.opts.RenewDeadline,
		RetryPeriod:     l.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            l.opts.LeaseName,
		WatchDog:        l.watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				defer close(leadDone)
				led.Store(true)
				logger.Info("Became leader, starting controllers", "identity", l.identity)
				if err := l.lead(leadCtx); err != nil {
					cancelRun(err)
				}
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != l.identity {
					logger.Info("Another replica leads; standing by", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}
	if l.watchdog != nil {
		l.watchdog.SetLeaderElection(le)
	}

	logger.Info("Waiting to acquire the leader-election lease", "lease", klog.KRef(l.opts.LeaseNamespace, l.opts.LeaseName),
		"identity", l.identity)
	le.Run(runCtx)

	if led.Load() {
		select {
		case <-leadDone:
		case <-time.After(l.opts.ShutdownGrace):
			logger.Info("Controllers did not stop within the grace period", "grace", l.opts.ShutdownGrace)
			if ctx.Err() == nil && context.Cause(runCtx) == nil {
				return fmt.Errorf("%w, and the controllers did not stop within %s", ErrControllersStuck, l.opts.ShutdownGrace)
			}
		}
	}
	switch {
	case ctx.Err() != nil:
		logger.Info("Leader election stopped on shutdown", "released", led.Load())
		return nil
	case context.Cause(runCtx) != nil:
		return context.Cause(runCtx)
	default:
		return ErrLeadershipLost
	}
}
