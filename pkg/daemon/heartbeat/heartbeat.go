// Package heartbeat keeps a coordination.k8s.io Lease per node renewed while
// kruise-daemon runs, so that kruise-controller can tell whether a node has a
// live daemon to execute the ContainerRecreateRequests routed to it. The
// Lease's name and timing, which the controller shares, are in
// pkg/contract/daemonlease.
package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/contract/daemonlease"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
)

// maxAttempts bounds the re-read-and-retry loop of one renewal when the
// Lease changed under us (conflict) or appeared while we created it.
const maxAttempts = 3

// Heartbeat renews the Lease of one node.
type Heartbeat struct {
	client    kube.Interface
	node      string
	namespace string
	clock     clock.Clock
	interval  time.Duration
	// last is the Lease as our last write left it. A renewal updates it
	// without reading it first, one request instead of two every interval;
	// a conflict (someone else wrote it) or any failure drops it, so the
	// next attempt reads the Lease again.
	last *coordinationv1.Lease
}

// New returns a Heartbeat for node whose Lease lives in namespace.
func New(client kube.Interface, node, namespace string, clk clock.Clock) *Heartbeat {
	return &Heartbeat{client: client, node: node, namespace: namespace, clock: clk, interval: daemonlease.RenewInterval}
}

// Run renews the Lease at once and then every daemonlease.RenewInterval until ctx ends.
// Failures are logged and retried at the next tick; they never stop the
// daemon.
func (h *Heartbeat) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("lease", klog.KRef(h.namespace, daemonlease.Name(h.node)))
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting node heartbeat", "interval", h.interval, "leaseDuration", daemonlease.Duration)
	failing := false
	for {
		// One renewal may not outlast the interval, so a hung request
		// cannot silence the heartbeat for longer than that.
		rctx, cancel := context.WithTimeout(ctx, h.interval)
		err := h.Renew(rctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			logger.Error(err, "Renewing the node heartbeat Lease failed; retrying at the next tick")
			failing = true
		case failing:
			logger.Info("Node heartbeat Lease renewed again")
			failing = false
		}
		select {
		case <-ctx.Done():
			logger.Info("Stopping node heartbeat")
			return
		case <-h.clock.After(h.interval):
		}
	}
}

// Renew creates or renews the Lease once, re-reading it when it changed
// concurrently.
func (h *Heartbeat) Renew(ctx context.Context) error {
	var err error
	for range maxAttempts {
		err = h.renewOnce(ctx)
		if err == nil || !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
			return err
		}
		klog.FromContext(ctx).V(4).Info("Node heartbeat Lease changed concurrently; retrying", "err", err)
	}
	return err
}

func (h *Heartbeat) renewOnce(ctx context.Context) error {
	leases := h.client.Leases(h.namespace)
	name := daemonlease.Name(h.node)
	now := metav1.NewMicroTime(h.clock.Now())
	cur, err := h.last, error(nil)
	h.last = nil
	if cur == nil {
		cur, err = leases.Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.namespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(h.node),
				LeaseDurationSeconds: ptr.To(int32(daemonlease.Duration / time.Second)),
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}
		if ref, rerr := h.nodeOwnerRef(ctx); rerr != nil {
			// Create it anyway: a heartbeat without an owner is better
			// than none; the owner is added at a later renewal.
			klog.FromContext(ctx).Error(rerr, "Cannot read the Node to own the heartbeat Lease")
		} else {
			lease.OwnerReferences = []metav1.OwnerReference{ref}
		}
		created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Lease %s/%s: %w", h.namespace, name, err)
		}
		h.last = created
		klog.FromContext(ctx).V(2).Info("Created node heartbeat Lease")
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Lease %s/%s: %w", h.namespace, name, err)
	}

	lease := cur.DeepCopy()
	lease.Spec.HolderIdentity = ptr.To(h.node)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(daemonlease.Duration / time.Second))
	lease.Spec.RenewTime = &now
	if lease.Spec.AcquireTime == nil {
		lease.Spec.AcquireTime = &now
	}
	if !ownedByNode(lease) {
		if ref, rerr := h.nodeOwnerRef(ctx); rerr == nil {
			lease.OwnerReferences = append(lease.OwnerReferences, ref)
		}
	}
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("renewing Lease %s/%s: %w", h.namespace, name, err)
	}
	h.last = updated
	return nil
}

// nodeOwnerRef makes the Node own the Lease, so that deleting the Node
// garbage-collects its heartbeat.
func (h *Heartbeat) nodeOwnerRef(ctx context.Context) (metav1.OwnerReference, error) {
	node, err := h.client.Nodes().Get(ctx, h.node, metav1.GetOptions{})
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("reading Node %s: %w", h.node, err)
	}
	if node.UID == "" {
		return metav1.OwnerReference{}, errors.New("node has no UID")
	}
	return metav1.OwnerReference{
		APIVersion: corev1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
	}, nil
}

func ownedByNode(lease *coordinationv1.Lease) bool {
	for _, ref := range lease.OwnerReferences {
		if ref.Kind == "Node" && ref.APIVersion == "v1" {
			return true
		}
	}
	return false
}
