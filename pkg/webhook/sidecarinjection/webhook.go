// Package sidecarinjection is the pod mutating webhook that injects SidecarSets' sidecars into
// pods at creation: it reads the SidecarSets, the pod's Namespace and the SidecarSets'
// ControllerRevisions from caches and patches the pod with what sidecarset.Inject returns.
package sidecarinjection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// Path is where the injection webhook is served; WebhookName names it in metrics and logs.
const (
	Path        = "/mutate-pod-sidecarset"
	WebhookName = "pod-sidecarset-inject"
)

// ReasonBadRequest: the request's object is not a pod that decodes.
const ReasonBadRequest = "BadRequest"

// SidecarSets lists every SidecarSet (a lister).
type SidecarSets interface {
	List() ([]*appsv1beta1.SidecarSet, error)
}

// Namespaces reads a Namespace's labels; a namespace not (yet) in the cache has only its
// kubernetes.io/metadata.name label, which the API server always sets.
type Namespaces interface {
	Labels(name string) (map[string]string, error)
}

// Injector decides the injection of one pod.
type Injector struct {
	SidecarSets SidecarSets
	Namespaces  Namespaces
	Revisions   sidecarrules.RevisionReader
	// Clock stamps the hash annotations; nil is the real clock.
	Clock clock.PassiveClock
	// Random draws Partial injection; nil is math/rand.
	Random func() float64
	// KruiseNamespace is where kruise runs: its pods, and those of kube-system, are never
	// injected, even if the configuration sends them (podscope).
	KruiseNamespace string
	// WaitSynced, when set, waits for the caches the injector reads; its error refuses the pod.
	WaitSynced func(ctx context.Context) error
	// Pending, when set, are the SidecarSets the webhook's routing covers that were admitted
	// a moment ago (sidecarrules.PendingAnnotation). While SidecarSets lacks one of them at
	// its admitted generation, the pod may be one its author applied right after it, and the
	// SidecarSets are read with Fresh instead.
	Pending func() sidecarrules.PendingSet
	// Fresh lists the SidecarSets from the API server (a read that starts after the call).
	Fresh func(ctx context.Context) ([]*appsv1beta1.SidecarSet, error)
	// Options are the injection's switches (gate EnableSortSidecarContainerByName).
	Options sidecarrules.InjectOptions
}

// Webhook is the injection webhook for the webhook server, with every reason it refuses a pod for.
func (in *Injector) Webhook() server.Webhook {
	reasons := []string{ReasonBadRequest}
	for _, r := range []sidecarrules.RefusalReason{
		sidecarrules.ReasonContainerConflict, sidecarrules.ReasonVolumeConflict, sidecarrules.ReasonAnnotationConflict,
		sidecarrules.ReasonInvalidPatch, sidecarrules.ReasonInvalidAnnotation, sidecarrules.ReasonRevisionNotFound,
		sidecarrules.ReasonResourcesPolicy,
	} {
		reasons = append(reasons, string(r))
	}
	return server.Webhook{Name: WebhookName, Path: Path, Admitter: server.AdmitFunc(in.Admit), Reasons: reasons}
}

// Admit injects the sidecars of the SidecarSets selecting a pod being created; any other request
// is allowed untouched. A conflict between SidecarSets refuses the pod (422) naming them; a cache
// read that fails is an error (the pod is refused rather than created without its sidecars).
func (in *Injector) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if req.Resource.Group != "" || req.Resource.Resource != "pods" || req.SubResource != "" || req.Operation != admissionv1.Create {
		return server.Allowed()
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return server.Result{Reason: ReasonBadRequest, Message: fmt.Sprintf("decoding the pod: %v", err), Code: http.StatusBadRequest}
	}
	namespace := req.Namespace
	if namespace == "" {
		namespace = pod.Namespace
	}
	if podscope.Excluded(namespace, in.KruiseNamespace) {
		return server.Allowed()
	}
	if in.WaitSynced != nil {
		if err := in.WaitSynced(ctx); err != nil {
			return server.Errored(err)
		}
	}
	injected, sets, err := in.inject(ctx, pod, namespace)
	var refusal *sidecarrules.Refusal
	switch {
	case errors.As(err, &refusal):
		return server.Invalid(string(refusal.Reason), refusal.Message)
	case err != nil:
		return server.Errored(err)
	case len(sets) == 0:
		return server.Allowed()
	}
	patch, err := diff(pod, injected)
	if err != nil {
		return server.Errored(err)
	}
	klog.FromContext(ctx).V(2).Info("Injecting sidecars", "namespace", namespace, "sidecarSets", sets)
	return server.Patched(patch)
}

// behind names a SidecarSet the routing covers as just admitted that cached lacks (at the
// generation admitted), if there is one: the cache may be behind.
func (in *Injector) behind(cached []*appsv1beta1.SidecarSet) (string, bool) {
	if in.Pending == nil || in.Fresh == nil {
		return "", false
	}
	pending := in.Pending()
	if len(pending) == 0 {
		return "", false
	}
	byName := make(map[string]*appsv1beta1.SidecarSet, len(cached))
	for _, ss := range cached {
		byName[ss.Name] = ss
	}
	for name, p := range pending {
		if !sidecarrules.Shown(byName, name, p) {
			return name, true
		}
	}
	return "", false
}

// inject returns pod with its sidecars and the names of the SidecarSets that injected them.
func (in *Injector) inject(ctx context.Context, pod *corev1.Pod, namespace string) (*corev1.Pod, []string, error) {
	all, err := in.SidecarSets.List()
	if err != nil {
		return nil, nil, fmt.Errorf("listing SidecarSets: %w", err)
	}
	if name, behind := in.behind(all); behind {
		klog.FromContext(ctx).V(2).Info("Reading the SidecarSets live: the cache lacks one just admitted", "sidecarSet", name)
		if all, err = in.Fresh(ctx); err != nil {
			return nil, nil, err
		}
	}
	if len(all) == 0 {
		return pod, nil, nil
	}
	nsLabels, err := in.Namespaces.Labels(namespace)
	if err != nil {
		return nil, nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	matched, skipped := sidecarrules.ForPod(all, pod, nsLabels)
	for _, err := range skipped {
		klog.FromContext(ctx).Error(err, "SidecarSet left out: its selector does not parse")
	}
	if len(matched) == 0 {
		return pod, nil, nil
	}
	random := in.Random
	if random == nil {
		random = rand.Float64
	}
	versions := make([]*appsv1beta1.SidecarSet, 0, len(matched))
	names := make([]string, 0, len(matched))
	for _, ss := range matched {
		v, err := sidecarrules.RevisionToInject(ss, pod, in.Revisions, random)
		if err != nil {
			return nil, nil, err
		}
		versions = append(versions, v)
		names = append(names, ss.Name)
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if in.Clock != nil {
		clk = in.Clock
	}
	out, err := sidecarrules.Inject(pod, namespace, versions, metav1.NewTime(clk.Now()), in.Options)
	return out, names, err
}
