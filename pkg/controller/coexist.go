package controller

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// openKruiseLeaseName is the leader-election Lease of OpenKruise's
	// kruise-manager.
	openKruiseLeaseName = "kruise-manager"
	// openKruiseNamespace is where OpenKruise installs by default.
	openKruiseNamespace = "kruise-system"
	// openKruiseRecheck spaces the looks at the Lease while OpenKruise's
	// manager runs.
	openKruiseRecheck = 10 * time.Second
	// openKruiseSlack is added to the Lease's duration before its holder
	// counts as gone: a renewal may be late, clocks differ a little.
	openKruiseSlack = 5 * time.Second
	// openKruiseDefaultDuration stands in for a Lease without
	// leaseDurationSeconds (controller-runtime's default).
	openKruiseDefaultDuration = 15 * time.Second
)

// openKruiseLeaseNamespaces are the namespaces where a kruise-manager Lease
// means OpenKruise's manager runs: kruise-system and our own, except the
// one where our own leader-election Lease has that name.
func openKruiseLeaseNamespaces(o *Options, ownNamespace string) []string {
	var out []string
	seen := map[string]bool{}
	for _, ns := range []string{openKruiseNamespace, ownNamespace} {
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		if o.LeaderElect && o.LeaseName == openKruiseLeaseName && o.LeaseNamespace == ns {
			continue
		}
		out = append(out, ns)
	}
	return out
}

// openKruiseGuard keeps this replica from competing for leadership while
// OpenKruise's kruise-manager runs: both would write the status of the same
// ContainerRecreateRequests, NodeImages and ImagePullJobs. It is a
// server.Checker: /readyz fails until the check passed.
type openKruiseGuard struct {
	leases     coordinationv1.LeasesGetter
	namespaces []string
	clock      clock.Clock

	mu sync.Mutex
	// problem is why the check fails; nil once OpenKruise's manager was
	// found absent.
	problem error
}

func newOpenKruiseGuard(leases coordinationv1.LeasesGetter, namespaces []string, clk clock.Clock) *openKruiseGuard {
	return &openKruiseGuard{leases: leases, namespaces: namespaces, clock: clk,
		problem: fmt.Errorf("not yet checked whether OpenKruise's kruise-manager runs (Lease %s in %v)", openKruiseLeaseName, namespaces)}
}

// Name implements server.Checker.
func (g *openKruiseGuard) Name() string { return "coexistence" }

// Check implements server.Checker.
func (g *openKruiseGuard) Check(*http.Request) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.problem
}

func (g *openKruiseGuard) set(problem error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.problem = problem
}

// wait returns nil once no live kruise-manager Lease is found, or ctx's
// error when ctx ends first. It reads each Lease once, and again every
// openKruiseRecheck only while OpenKruise's manager runs (or the Lease
// cannot be read); nothing after it returns.
func (g *openKruiseGuard) wait(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	reported := false
	for {
		live, err := g.look(ctx)
		switch {
		case err == nil && live == nil:
			if reported {
				logger.Info("OpenKruise's kruise-manager is gone; starting")
			}
			g.set(nil)
			return nil
		case err != nil:
			g.set(err)
			logger.Info("Cannot tell yet whether OpenKruise's kruise-manager runs; checking again", "err", err, "after", openKruiseRecheck)
		default:
			problem := fmt.Errorf("%s; kruise-controller does not start while it runs: uninstall OpenKruise "+
				"(e.g. helm uninstall kruise -n %s), kruise replaces it; checking again every %s", live, live.namespace, openKruiseRecheck)
			g.set(problem)
			if !reported {
				logger.Error(nil, "OpenKruise's kruise-manager runs in this cluster; not starting the controllers until it is gone",
					"lease", klog.KRef(live.namespace, openKruiseLeaseName), "holder", live.holder, "renewed", live.renewed,
					"todo", "uninstall OpenKruise; kruise replaces it")
				reported = true
			} else {
				logger.V(2).Info("OpenKruise's kruise-manager still runs", "lease", klog.KRef(live.namespace, openKruiseLeaseName),
					"holder", live.holder, "renewed", live.renewed)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-g.clock.After(openKruiseRecheck):
		}
	}
}

// liveLease describes a kruise-manager Lease whose holder still counts.
type liveLease struct {
	namespace, holder string
	renewed           time.Time
	age               time.Duration
}

func (l *liveLease) String() string {
	return fmt.Sprintf("OpenKruise's kruise-manager runs: its leader-election Lease %s/%s is held by %q, renewed %s ago",
		l.namespace, openKruiseLeaseName, l.holder, l.age.Round(time.Second))
}

// look reads the kruise-manager Lease of each namespace and returns the
// first live one. A Lease we may not read (Forbidden) is skipped: we cannot
// tell, and kruise's RBAC only grants its own namespace.
func (g *openKruiseGuard) look(ctx context.Context) (*liveLease, error) {
	logger := klog.FromContext(ctx)
	for _, ns := range g.namespaces {
		lease, err := g.leases.Leases(ns).Get(ctx, openKruiseLeaseName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err):
			logger.Info("May not read the Lease that would show OpenKruise's kruise-manager; not checking this namespace",
				"lease", klog.KRef(ns, openKruiseLeaseName), "err", err)
			continue
		case err != nil:
			return nil, fmt.Errorf("reading Lease %s/%s to tell whether OpenKruise's kruise-manager runs: %w", ns, openKruiseLeaseName, err)
		}
		if l := g.live(ns, lease); l != nil {
			return l, nil
		}
	}
	return nil, nil
}

// live returns the Lease's holder when it renewed within its duration plus
// openKruiseSlack; nil for a released (no holder) or expired Lease.
func (g *openKruiseGuard) live(namespace string, lease *coordv1.Lease) *liveLease {
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return nil
	}
	var renewed time.Time
	switch {
	case lease.Spec.RenewTime != nil:
		renewed = lease.Spec.RenewTime.Time
	case lease.Spec.AcquireTime != nil:
		renewed = lease.Spec.AcquireTime.Time
	default:
		return nil
	}
	duration := openKruiseDefaultDuration
	if d := lease.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		duration = time.Duration(*d) * time.Second
	}
	now := g.clock.Now()
	if !now.Before(renewed.Add(duration + openKruiseSlack)) {
		return nil
	}
	return &liveLease{namespace: namespace, holder: *lease.Spec.HolderIdentity, renewed: renewed, age: now.Sub(renewed)}
}
