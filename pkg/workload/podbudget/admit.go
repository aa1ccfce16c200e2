package podbudget

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	policylisters "github.com/nodekruise/kruise/pkg/client/listers/policy/v1alpha1"
)

// Events recorded on a pod whose disruption a budget refused.
const (
	ReasonPreventDeletion = "PubPreventPodDeletion"
	ReasonPreventUpdate   = "PubPreventPodUpdate"
)

// DefaultAttempts bounds the status writes one Admit tries when others write the budget too.
const DefaultAttempts = 5

// AdmitterConfig is what an Admitter reads and writes through.
type AdmitterConfig struct {
	// Client reads budgets live and writes their status.
	Client versioned.Interface
	// Budgets reads budgets from a cache; nil lists them from the API server at each call.
	Budgets policylisters.PodUnavailableBudgetLister
	// Owners reads the controllers above a pod's own (targetRef budgets naming a Deployment,
	// budgets per workload); nil knows only the pod's own controller.
	Owners Owners
	// Recorder, when set, records an Event on each pod whose disruption is refused.
	Recorder record.EventRecorder
	// Clock stamps the charges; nil is the real clock.
	Clock clock.PassiveClock
	// Attempts bounds the writes per Admit; 0 is DefaultAttempts.
	Attempts int
}

// Admitter is the one place that charges a PodUnavailableBudget for a disruption.
type Admitter struct {
	cfg       AdmitterConfig
	decisions *prometheus.CounterVec
}

// NewAdmitter returns an Admitter.
func NewAdmitter(cfg AdmitterConfig) *Admitter {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	return &Admitter{cfg: cfg, decisions: newDecisions()}
}

// Admit decides whether op on pod may go ahead now. When it may and a budget covers the pod, the
// pod is first recorded in the budget's status (disruptedPods for DELETE/EVICT/RESIZE,
// unavailablePods for UPDATE) with unavailableAllowed decremented, written with the read
// resourceVersion (optimistic concurrency, retried on conflict with a live GET), so that
// concurrent callers on any replica can never exceed the budget. dryRun decides without writing.
// A refusal's reason names the budget ("PodUnavailableBudget <ns>/<name>: ...") and why. err is
// for failures to decide (the caller refuses).
//
// Free: a pod annotated pub.kruise.io/no-protect, a pod no budget covers, an operation the budget
// does not guard, a pod that is not available (unless the budget protects unready pods), a pod
// already recorded, a budget that keeps nothing available. A refusal read from the cache is
// confirmed with a live read first.
func (a *Admitter) Admit(ctx context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) (bool, string, error) {
	result, reason, err := a.admit(ctx, pod, op, dryRun)
	a.decisions.WithLabelValues(string(op), result).Inc()
	return result == resultFree || result == resultCharged, reason, err
}

// admit is Admit, saying which result it came to.
func (a *Admitter) admit(ctx context.Context, pod *corev1.Pod, op policyv1alpha1.PubOperation, dryRun bool) (string, string, error) {
	if pod.Annotations[policyv1alpha1.PodPubNoProtectionAnnotation] == "true" {
		return resultFree, "", nil
	}
	b, err := a.budgetFor(ctx, pod)
	if err != nil {
		return resultError, "", err
	}
	if b == nil || !Protects(b, op) || !Available(pod, ProtectsUnready(b)) {
		return resultFree, "", nil
	}
	var w Workload
	if PerWorkload(b) {
		if w, err = WorkloadOf(ctx, a.cfg.Owners, pod); err != nil {
			return resultError, "", err
		}
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "podUnavailableBudget", klog.KObj(b), "operation", op)
	// gone is the result when the budget turns out to be gone: nothing protects the pod any more.
	reread := func() (gone bool, err error) {
		b, err = a.get(ctx, b)
		return err == nil && b == nil, err
	}
	live := a.cfg.Budgets == nil
	for range a.cfg.Attempts {
		if err := ctx.Err(); err != nil {
			return resultError, "", err
		}
		d := Decide(b, pod.Name, w, op, a.cfg.Clock.Now())
		switch d.Verdict {
		case Free:
			return resultFree, "", nil
		case Refuse:
			if !live {
				// The cache may lag behind the controller's last count: ask the API server.
				if gone, err := reread(); gone || err != nil {
					return resultOf(gone), "", err
				}
				live = true
				continue
			}
			logger.V(2).Info("Refused a disruption", "reason", d.Reason)
			a.refused(pod, op, d.Reason)
			return resultRefused, d.Reason, nil
		}
		if dryRun {
			return resultCharged, "", nil
		}
		next := b.DeepCopy()
		next.Status = *d.Status
		_, err := a.cfg.Client.PolicyV1alpha1().PodUnavailableBudgets(b.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		switch {
		case err == nil:
			logger.V(2).Info("Charged a disruption", "unavailableAllowed", next.Status.UnavailableAllowed)
			return resultCharged, "", nil
		case apierrors.IsConflict(err):
			if gone, err := reread(); gone || err != nil {
				return resultOf(gone), "", err
			}
			live = true
		case apierrors.IsNotFound(err):
			return resultFree, "", nil
		default:
			return resultError, "", fmt.Errorf("charging %s: %w", budgetName(b), err)
		}
	}
	return resultError, "", fmt.Errorf("charging %s: %w", budgetName(b), errTooManyConflicts)
}

// resultOf is the result of a re-read that found the budget gone (free) or failed (error).
func resultOf(gone bool) string {
	if gone {
		return resultFree
	}
	return resultError
}

var errTooManyConflicts = errors.New("the budget kept changing under us")

// get reads b live; nil when it is gone.
func (a *Admitter) get(ctx context.Context, b *policyv1alpha1.PodUnavailableBudget) (*policyv1alpha1.PodUnavailableBudget, error) {
	got, err := a.cfg.Client.PolicyV1alpha1().PodUnavailableBudgets(b.Namespace).Get(ctx, b.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", budgetName(b), err)
	case got.DeletionTimestamp != nil:
		return nil, nil
	}
	return got, nil
}

// budgetFor returns the budget that covers pod, nil when none does: the one the pod's
// kruise.io/related-pub names is tried first, then the others by name (the validating webhook
// keeps budgets from overlapping; should they, the first by name decides).
func (a *Admitter) budgetFor(ctx context.Context, pod *corev1.Pod) (*policyv1alpha1.PodUnavailableBudget, error) {
	var budgets []*policyv1alpha1.PodUnavailableBudget
	if a.cfg.Budgets != nil {
		var err error
		if budgets, err = a.cfg.Budgets.PodUnavailableBudgets(pod.Namespace).List(labels.Everything()); err != nil {
			return nil, fmt.Errorf("listing PodUnavailableBudgets: %w", err)
		}
	} else {
		list, err := a.cfg.Client.PolicyV1alpha1().PodUnavailableBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing PodUnavailableBudgets: %w", err)
		}
		for i := range list.Items {
			budgets = append(budgets, &list.Items[i])
		}
	}
	hint := pod.Annotations[policyv1alpha1.PodRelatedPubAnnotation]
	sort.Slice(budgets, func(i, j int) bool {
		if hi, hj := budgets[i].Name == hint, budgets[j].Name == hint; hi != hj {
			return hi
		}
		return budgets[i].Name < budgets[j].Name
	})
	for _, b := range budgets {
		ok, err := Covers(ctx, a.cfg.Owners, b, pod)
		if err != nil {
			return nil, err
		}
		if ok {
			return b, nil
		}
	}
	return nil, nil
}

// refused records the refusal on the pod.
func (a *Admitter) refused(pod *corev1.Pod, op policyv1alpha1.PubOperation, reason string) {
	if a.cfg.Recorder == nil {
		return
	}
	event := ReasonPreventDeletion
	if op == policyv1alpha1.PubUpdateOperation || op == policyv1alpha1.PubResizeOperation {
		event = ReasonPreventUpdate
	}
	a.cfg.Recorder.Event(pod, corev1.EventTypeWarning, event, reason)
}
