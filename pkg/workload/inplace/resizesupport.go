package inplace

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ResizeNotServed is why pods cannot be resized on an API server that does not serve the
// pods/resize subresource (before Kubernetes 1.33, unless InPlacePodVerticalScaling is on).
const ResizeNotServed = "the API server does not serve pods/resize (Kubernetes 1.33 and later), so cpu and memory cannot change in running pods"

// resizeRecheck is how long an answer of discovery is kept: a control plane upgraded to a
// release that resizes pods is noticed within it, without a restart. A failed discovery is
// retried after resizeRetry.
const (
	resizeRecheck = 10 * time.Minute
	resizeRetry   = 30 * time.Second
)

// CoreResources lists the API server's core (v1) resources; a discovery client's
// ServerResourcesForGroupVersion.
type CoreResources func(groupVersion string) (*metav1.APIResourceList, error)

// ResizeSupport says whether the API server resizes pods, asking discovery at most once per
// resizeRecheck. A nil *ResizeSupport answers that it does, as does one whose discovery fails
// (the resize call then reports its own error). Safe for concurrent use.
type ResizeSupport struct {
	list  CoreResources
	clock clock.PassiveClock

	// off, when set, is the answer whatever the API server serves (ResizeOff).
	off string

	mu sync.Mutex
	// next is when to ask discovery again; answered, whether it ever answered.
	next     time.Time
	answered bool
	reason   string
}

// NewResizeSupport asks list (a discovery client's ServerResourcesForGroupVersion) the first time
// it is needed.
func NewResizeSupport(list CoreResources, clk clock.PassiveClock) *ResizeSupport {
	return &ResizeSupport{list: list, clock: clk}
}

// ResizeOff answers reason, never asking discovery: for a cluster where kruise is told not to
// resize pods (gate InPlaceWorkloadVerticalScaling off), so that every workload plans a cpu or
// memory change as not in place, with reason as its NotInPlaceError's Detail.
func ResizeOff(reason string) *ResizeSupport {
	return &ResizeSupport{off: reason}
}

// NoResize is why pods cannot be resized, "" when they can: ResizeNotServed on an API server
// without pods/resize, or ResizeOff's reason. It logs when the answer changes.
func (r *ResizeSupport) NoResize(ctx context.Context) string {
	if r == nil {
		return ""
	}
	if r.off != "" {
		return r.off
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if now.Before(r.next) {
		return r.reason
	}
	logger := klog.FromContext(ctx)
	resources, err := r.list("v1")
	if err != nil {
		r.next = now.Add(resizeRetry)
		logger.Info("Could not read whether the API server serves pods/resize; keeping the last answer",
			"resizeUnavailable", r.reason, "err", fmt.Errorf("discovery of v1: %w", err))
		return r.reason
	}
	reason := ""
	if !servesResize(resources) {
		reason = ResizeNotServed
	}
	if !r.answered || reason != r.reason {
		if reason != "" {
			logger.Info("In-place resize unavailable: cpu and memory changes recreate pods (InPlaceIfPossible) or are refused (InPlaceOnly)", "reason", reason)
		} else {
			logger.Info("The API server serves pods/resize: cpu and memory change in place")
		}
	}
	r.answered, r.next, r.reason = true, now.Add(resizeRecheck), reason
	return reason
}

// servesResize reports whether a core v1 resource list has the pods/resize subresource.
func servesResize(l *metav1.APIResourceList) bool {
	if l == nil {
		return false
	}
	for _, res := range l.APIResources {
		if res.Name == "pods/resize" {
			return true
		}
	}
	return false
}
