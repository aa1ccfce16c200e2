package spreadinjection

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/workload/spread"
)

// AdmitCreate places a pod being created in a subset of its workload's WorkloadSpread: it records
// the pod in the spread's status (unless dryRun) and patches in the subset's affinity,
// tolerations and patch. A pod no spread targets is allowed untouched.
//
// A targeted pod whose placement cannot be recorded (the API server keeps refusing the status
// write, or the subset's patch does not apply) is refused with a message naming the spread: the
// ledger is what keeps concurrent creates from overfilling a subset, so a pod is never admitted
// unrecorded. Its workload controller creates it again; an Event on the spread says why. With
// the chart's failurePolicy Fail (webhook.failurePolicy.workloadSpread) a targeted pod likewise
// waits while kruise is unreachable; Ignore admits it unspread then.
func (w *Webhook) AdmitCreate(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	w.init()
	if req.Resource.Group != "" || req.Resource.Resource != "pods" || req.SubResource != "" || req.Operation != admissionv1.Create {
		return server.Allowed()
	}
	if podscope.Excluded(req.Namespace, w.KruiseNamespace) {
		return server.Allowed()
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil || len(req.Object.Raw) == 0 {
		return badRequest("the pod", err)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	if !active(pod) {
		return server.Allowed()
	}
	ws, err := w.find(ctx, pod)
	if err != nil {
		return server.Errored(err)
	}
	if ws == nil {
		return server.Allowed()
	}
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	logger := klog.FromContext(ctx).WithValues("workloadSpread", klog.KObj(ws), "pod", name, "dryRun", dryRun(req))
	total, err := w.total(ctx, ws)
	if err != nil {
		w.event(ws, corev1.EventTypeWarning, EventAdmissionFailed, "could not read the target's replicas for pod %s: %v", name, err)
		return server.Errored(fmt.Errorf("WorkloadSpread %s/%s: reading its target's replicas: %w", ws.Namespace, ws.Name, err))
	}
	type decision struct {
		placement spread.Placement
		injected  *corev1.Pod
	}
	d, written, gone, err := update(ctx, w.ledger, ws, dryRun(req), func(cur *appsv1alpha1.WorkloadSpread) (decision, bool, error) {
		p, err := spread.Assign(cur, pod, total, w.Clock.Now(), w.NewKey)
		if err != nil || p.Subset == nil {
			return decision{placement: p}, false, err
		}
		// Injected before the status is written: a subset whose patch does not apply records nothing.
		injected := pod.DeepCopy()
		if err := spread.Inject(injected, cur, p.Subset, p.Key); err != nil {
			return decision{}, false, err
		}
		return decision{placement: p, injected: injected}, p.StatusChanged, nil
	})
	switch {
	case err != nil:
		logger.Error(err, "Refusing a pod whose WorkloadSpread subset could not be recorded")
		w.event(ws, corev1.EventTypeWarning, EventAdmissionFailed, "pod %s refused: %v; its controller creates it again", name, err)
		return server.Errored(fmt.Errorf("WorkloadSpread %s/%s could not place the pod: %w", ws.Namespace, ws.Name, err))
	case gone || d.injected == nil:
		return server.Allowed()
	}
	patch, err := diff(pod, d.injected)
	if err != nil {
		return server.Errored(err)
	}
	var warnings []string
	if d.placement.Overflow {
		msg := fmt.Sprintf("no schedulable subset of WorkloadSpread %s had room: the pod goes to subset %s, the least filled, and is the first removed at scale-in", ws.Name, d.placement.Subset.Name)
		warnings = append(warnings, msg)
		if !dryRun(req) {
			w.event(ws, corev1.EventTypeNormal, EventNoRoom, "pod %s: %s", name, msg)
		}
	}
	logger.V(3).Info("Placed a pod in a WorkloadSpread subset", "subset", d.placement.Subset.Name, "recorded", written, "overflow", d.placement.Overflow)
	return server.Patched(patch, warnings...)
}
