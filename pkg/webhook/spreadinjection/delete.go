package spreadinjection

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/workload/spread"
)

// AdmitDelete records the deletion (pods DELETE) or eviction (pods/eviction CREATE) of an active
// pod a WorkloadSpread placed: the pod goes into its subset's deletingPods and the subset gains a
// place, so that the replacement the workload creates next lands there. It always allows: this is
// accounting, and a failure is logged and left to the controller's recount. A dry run records
// nothing.
func (w *Webhook) AdmitDelete(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	w.init()
	if req.Resource.Group != "" || req.Resource.Resource != "pods" || podscope.Excluded(req.Namespace, w.KruiseNamespace) || dryRun(req) {
		return server.Allowed()
	}
	logger := klog.FromContext(ctx)
	var pod *corev1.Pod
	switch {
	case req.Operation == admissionv1.Delete && req.SubResource == "":
		pod = &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, pod); err != nil {
			logger.V(2).Info("Not recording a pod deletion: the pod does not decode", "err", err)
			return server.Allowed()
		}
	case req.Operation == admissionv1.Create && req.SubResource == "eviction":
		var eviction struct {
			DeleteOptions *metav1.DeleteOptions `json:"deleteOptions,omitempty"`
		}
		if err := json.Unmarshal(req.Object.Raw, &eviction); err != nil || (eviction.DeleteOptions != nil && len(eviction.DeleteOptions.DryRun) > 0) {
			return server.Allowed()
		}
		if w.Pods == nil {
			return server.Allowed()
		}
		p, err := w.Pods.Get(ctx, req.Namespace, req.Name)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				logger.Error(err, "Not recording a pod eviction: reading the pod failed", "pod", klog.KRef(req.Namespace, req.Name))
			}
			return server.Allowed()
		}
		pod = p
	default:
		return server.Allowed()
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	m, ok := spread.Matched(pod)
	if !ok || !active(pod) || metav1.GetControllerOfNoCopy(pod) == nil {
		return server.Allowed()
	}
	ws, err := w.Spreads.Cached(pod.Namespace, m.Name)
	if apierrors.IsNotFound(err) {
		ws, err = w.Spreads.Get(ctx, pod.Namespace, m.Name)
	}
	if apierrors.IsNotFound(err) {
		return server.Allowed()
	}
	logger = logger.WithValues("workloadSpread", klog.KRef(pod.Namespace, m.Name), "pod", klog.KObj(pod), "subset", m.Subset)
	if err != nil {
		logger.Error(err, "Not recording a pod deletion: reading its WorkloadSpread failed")
		return server.Allowed()
	}
	now := w.now()
	_, written, _, err := update(ctx, w.ledger, ws, false, func(cur *appsv1alpha1.WorkloadSpread) (struct{}, bool, error) {
		return struct{}{}, spread.Release(cur, pod, m, now.Time), nil
	})
	if err != nil {
		logger.Error(err, "Not recording a pod deletion; the WorkloadSpread controller recounts it")
		return server.Allowed()
	}
	logger.V(3).Info("Recorded a pod deletion in its WorkloadSpread subset", "recorded", written)
	return server.Allowed()
}
