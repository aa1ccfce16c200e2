//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/controller"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// fenceHolder is the identity under which the benchmark holds kruise-controller's Lease.
const fenceHolder = "kruise-bench-fence"

// leaseFence keeps every kruise-controller replica from leading by holding their
// leader-election Lease under an identity of its own, renewed every 2 s. Leadership only
// gates the controllers: the replicas keep serving admission webhooks and CRD conversion
// (which OpenKruise needs to read CloneSets as v1alpha1; they are stored as v1beta1), so this
// stops kruise's CloneSet controller without restarting or scaling anything.
type leaseFence struct {
	e       *env
	stopped chan struct{}
	done    chan struct{}

	mu  sync.Mutex
	err error // the first renewal that failed
}

// fenceKruise takes the Lease over and waits until the replica that led has stopped its
// controllers (its log says so). The caller must release the fence.
func (e *env) fenceKruise(ctx context.Context) (*leaseFence, error) {
	leases := e.client.CoordinationV1().Leases(kruiseNamespace)
	var leader string
	since := metav1.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, controller.DefaultLeaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		leader, _, _ = strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity = ptr.To(fenceHolder)
		l.Spec.LeaseDurationSeconds = ptr.To[int32](15)
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("taking over Lease %s/%s: %w", kruiseNamespace, controller.DefaultLeaseName, err)
	}
	f := &leaseFence{e: e, stopped: make(chan struct{}), done: make(chan struct{})}
	go f.renew()
	if leader == "" || leader == fenceHolder {
		return f, nil
	}
	// The leader notices at its next renewal and gives up after its renew deadline (10 s).
	if _, err := framework.Poll(ctx, rolloutTimeout, func(ctx context.Context) (bool, string, error) {
		if err := f.failed(); err != nil {
			return false, "", err
		}
		ok, err := e.controllerLogged(ctx, leader, since, "Lost the leader-election lease")
		return ok, "waiting for " + leader + " to log that it lost the lease", err
	}); err != nil {
		return f, fmt.Errorf("kruise-controller %s stopping its controllers: %w", leader, err)
	}
	return f, nil
}

func (f *leaseFence) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *leaseFence) renew() {
	defer close(f.done)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-f.stopped:
			return
		case <-tick.C:
		}
		err := f.update(context.Background(), func(l *coordinationv1.Lease) error {
			if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != fenceHolder {
				return fmt.Errorf("the Lease was taken by %q while fenced", h)
			}
			l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
			return nil
		})
		if err != nil {
			f.mu.Lock()
			if f.err == nil {
				f.err = err
			}
			f.mu.Unlock()
		}
	}
}

func (f *leaseFence) update(ctx context.Context, edit func(*coordinationv1.Lease) error) error {
	leases := f.e.client.CoordinationV1().Leases(kruiseNamespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, controller.DefaultLeaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := edit(l); err != nil {
			return err
		}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
}

// release stops renewing, empties the Lease's holder so a replica takes it at its next try
// (every 2 s), and waits until one leads and has started its controllers. It returns the
// first error of the fenced period too (a failed renewal means a replica may have led).
func (f *leaseFence) release(ctx context.Context) error {
	close(f.stopped)
	<-f.done
	since := metav1.Now()
	err := f.update(ctx, func(l *coordinationv1.Lease) error {
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != fenceHolder {
			return nil // taken already
		}
		l.Spec.HolderIdentity = ptr.To("")
		l.Spec.LeaseDurationSeconds = ptr.To[int32](1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("releasing Lease %s/%s: %w", kruiseNamespace, controller.DefaultLeaseName, err)
	}
	if _, err := framework.Poll(ctx, rolloutTimeout, func(ctx context.Context) (bool, string, error) {
		l, err := f.e.client.CoordinationV1().Leases(kruiseNamespace).Get(ctx, controller.DefaultLeaseName, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		pod, _, _ := strings.Cut(holder, "_")
		if pod == "" || pod == fenceHolder {
			return false, fmt.Sprintf("Lease holder %q", holder), nil
		}
		ok, err := f.e.controllerLogged(ctx, pod, since, `"Started controllers"`)
		return ok, fmt.Sprintf("Lease holder %q; waiting for it to log \"Started controllers\"", holder), err
	}); err != nil {
		return fmt.Errorf("kruise-controller leading again: %w", err)
	}
	return f.failed()
}

// controllerLogged says whether kruise-controller pod has logged a line containing s since.
func (e *env) controllerLogged(ctx context.Context, pod string, since metav1.Time, s string) (bool, error) {
	// Log timestamps have whole seconds at the API: look back one more.
	from := metav1.NewTime(since.Add(-time.Second))
	raw, err := e.client.CoreV1().Pods(kruiseNamespace).GetLogs(pod, &corev1.PodLogOptions{Container: controllerContainer, SinceTime: &from}).DoRaw(ctx)
	if err != nil {
		return false, framework.Retry(err)
	}
	return slices.ContainsFunc(strings.Split(string(raw), "\n"), func(l string) bool { return strings.Contains(l, s) }), nil
}
