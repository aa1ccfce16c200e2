package spreadinjection

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/workload/spread"
)

const (
	// Path serves the pod CREATE entry mworkloadspread.kb.io. OpenKruise folds this into its
	// /mutate-pod; kruise mounts one entry per concern, so that each is scoped and failed alone.
	Path = "/mutate-pod-workloadspread"
	// DeletePath serves the pod DELETE and pods/eviction CREATE entries (vworkloadspread-pod.kb.io,
	// vworkloadspread-eviction.kb.io).
	DeletePath = "/validate-pod-workloadspread"
	// WebhookName and DeleteWebhookName name them in the webhook server's metrics and logs.
	WebhookName       = "pod-workloadspread"
	DeleteWebhookName = "pod-workloadspread-delete"
)

// Why a create is refused (the rejection metric's reason); a failure to decide is an error.
const (
	// ReasonBadRequest: the request's pod does not decode.
	ReasonBadRequest = "BadRequest"
)

// Event reasons on the WorkloadSpread.
const (
	// EventAdmissionFailed: a targeted pod's create was refused because its subset could not be
	// recorded or injected; its workload controller creates it again.
	EventAdmissionFailed = "PodAdmissionFailed"
	// EventNoRoom: no schedulable subset had room; the pod went to the least filled one.
	EventNoRoom = "NoSubsetWithRoom"
)

// Webhook is WorkloadSpread's pod admission.
type Webhook struct {
	Spreads Spreads
	// Targets reads the target for percentages of maxReplicas; nil counts 0 replicas.
	Targets Targets
	// Pods reads the pod an eviction names.
	Pods Pods
	// ReplicaSetOwner resolves a ReplicaSet to its Deployment; nil resolves none.
	ReplicaSetOwner ReplicaSetOwner
	// KruiseNamespace's pods, and kube-system's, are never acted on (podscope).
	KruiseNamespace string
	// Recorder records Events on WorkloadSpreads; nil records none.
	Recorder record.EventRecorder
	// Clock stamps creatingPods and deletingPods; nil is the real clock.
	Clock clock.PassiveClock
	// NewKey keys a pod created without a name in creatingPods; nil makes UUIDs.
	NewKey func() string

	once   sync.Once
	ledger *ledger
}

func (w *Webhook) init() {
	w.once.Do(func() {
		w.ledger = newLedger(w.Spreads)
		if w.Clock == nil {
			w.Clock = clock.RealClock{}
		}
		if w.NewKey == nil {
			w.NewKey = func() string { return string(uuid.NewUUID()) }
		}
	})
}

// CreateWebhook is the pod CREATE webhook for the webhook server.
func (w *Webhook) CreateWebhook() server.Webhook {
	return server.Webhook{Name: WebhookName, Path: Path, Admitter: server.AdmitFunc(w.AdmitCreate), Reasons: []string{ReasonBadRequest}}
}

// DeleteWebhook is the pod DELETE and eviction webhook for the webhook server.
func (w *Webhook) DeleteWebhook() server.Webhook {
	return server.Webhook{Name: DeleteWebhookName, Path: DeletePath, Admitter: server.AdmitFunc(w.AdmitDelete)}
}

func (w *Webhook) now() metav1.Time { return metav1.NewTime(w.Clock.Now()) }

func (w *Webhook) event(ws *appsv1alpha1.WorkloadSpread, typ, reason, format string, args ...any) {
	if w.Recorder != nil {
		w.Recorder.Eventf(ws, typ, reason, format, args...)
	}
}

func badRequest(what string, err error) server.Result {
	if err == nil {
		err = fmt.Errorf("empty")
	}
	return server.Result{Reason: ReasonBadRequest, Code: http.StatusBadRequest, Message: fmt.Sprintf("decoding %s: %v", what, err)}
}

// active is the reference's filter: a pod being deleted or finished is not spread.
func active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// owners are the workloads pod may be spread as: its controller, and for a ReplicaSet its
// Deployment -- the cached ReplicaSet's controller or, for a ReplicaSet the cache does not have
// yet (a rollout's first pods), the Deployment its name and the pod's pod-template-hash imply.
func (w *Webhook) owners(pod *corev1.Pod) []appsv1alpha1.TargetReference {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil
	}
	out := []appsv1alpha1.TargetReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}}
	if ref.Kind != "ReplicaSet" || !strings.HasPrefix(ref.APIVersion, "apps/") {
		return out
	}
	var up *metav1.OwnerReference
	if w.ReplicaSetOwner != nil {
		up = w.ReplicaSetOwner(pod.Namespace, ref.Name)
	}
	if up != nil {
		return append(out, appsv1alpha1.TargetReference{APIVersion: up.APIVersion, Kind: up.Kind, Name: up.Name})
	}
	if hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; hash != "" && strings.HasSuffix(ref.Name, "-"+hash) {
		out = append(out, appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: strings.TrimSuffix(ref.Name, "-"+hash)})
	}
	return out
}

// find is the WorkloadSpread of pod: one not being deleted that targets one of its owners and
// whose targetFilter selects it (the oldest, should several). A namespace whose cached spreads
// target none of its owners is listed live once: the pod was routed here, so a spread created a
// moment ago may target it.
func (w *Webhook) find(ctx context.Context, pod *corev1.Pod) (*appsv1alpha1.WorkloadSpread, error) {
	refs := w.owners(pod)
	if len(refs) == 0 {
		return nil, nil
	}
	list, err := w.Spreads.List(pod.Namespace)
	if err != nil {
		return nil, fmt.Errorf("listing the WorkloadSpreads of %s: %w", pod.Namespace, err)
	}
	ws, referred := pick(list, refs, pod)
	if referred {
		return ws, nil
	}
	if list, err = w.Spreads.ListLive(ctx, pod.Namespace); err != nil {
		return nil, fmt.Errorf("listing the WorkloadSpreads of %s: %w", pod.Namespace, err)
	}
	ws, _ = pick(list, refs, pod)
	return ws, nil
}

func pick(list []*appsv1alpha1.WorkloadSpread, refs []appsv1alpha1.TargetReference, pod *corev1.Pod) (*appsv1alpha1.WorkloadSpread, bool) {
	var found []*appsv1alpha1.WorkloadSpread
	referred := false
	for _, ws := range list {
		if ws.DeletionTimestamp != nil || !slices.ContainsFunc(refs, func(r appsv1alpha1.TargetReference) bool { return spread.RefersTo(ws, r) }) {
			continue
		}
		referred = true
		if selects(ws, pod) {
			found = append(found, ws)
		}
	}
	if len(found) == 0 {
		return nil, referred
	}
	slices.SortFunc(found, func(a, b *appsv1alpha1.WorkloadSpread) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return found[0], true
}

// selects is the targetFilter's selector on the pod's labels (none selects every pod; one that
// does not parse, none).
func selects(ws *appsv1alpha1.WorkloadSpread, pod *corev1.Pod) bool {
	f := ws.Spec.TargetFilter
	if f == nil || f.Selector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(f.Selector)
	return err == nil && sel.Matches(labels.Set(pod.Labels))
}

// total is the target's replicas when a percentage needs them (0 without one, or when the
// target does not exist).
func (w *Webhook) total(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) (int32, error) {
	percent := slices.ContainsFunc(ws.Spec.Subsets, func(s appsv1alpha1.WorkloadSpreadSubset) bool {
		return s.MaxReplicas != nil && s.MaxReplicas.Type == intstr.String
	})
	if !percent || w.Targets == nil || ws.Spec.TargetReference == nil {
		return 0, nil
	}
	obj, err := w.Targets.Get(ctx, ws.Namespace, *ws.Spec.TargetReference)
	if err != nil || obj == nil {
		return 0, err
	}
	wl, err := spread.WorkloadOf(obj, ws.Spec.TargetFilter)
	if err != nil {
		return 0, err
	}
	return wl.Replicas, nil
}

func dryRun(req *admissionv1.AdmissionRequest) bool { return req.DryRun != nil && *req.DryRun }
