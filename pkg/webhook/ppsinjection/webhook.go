package ppsinjection

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	kruisev1alpha1 "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// Path is where the webhook is served: an entry of its own (not OpenKruise's /mutate-pod), so
	// that only StatefulSet pods are sent and its failurePolicy can be Ignore.
	Path = "/mutate-pod-persistentpodstate"
	// Name names it in the webhook server's metrics and logs.
	Name = "pod-persistentpodstate"
)

// Lookups are what the webhook reads: the namespace's PersistentPodStates (listed from the API
// server's watch cache, resourceVersion "0") and the recorded node.
type Lookups struct {
	States kruisev1alpha1.PersistentPodStatesGetter
	Nodes  corev1client.NodesGetter
}

// Webhook is the pod webhook for the webhook server. Pods of kube-system and of kruiseNamespace
// are admitted untouched (podscope) even if the configuration sends them.
func Webhook(l Lookups, kruiseNamespace string) server.Webhook {
	return server.Webhook{
		Name: Name,
		Path: Path,
		Admitter: server.AdmitFunc(func(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
			if podscope.Excluded(req.Namespace, kruiseNamespace) || req.Operation != admissionv1.Create ||
				req.SubResource != "" || req.Resource.Group != "" || req.Resource.Resource != "pods" {
				return server.Allowed()
			}
			body, err := l.patch(ctx, req)
			if err != nil {
				// Admitted unsteered, as failurePolicy Ignore would: the pod schedules anywhere.
				klog.FromContext(ctx).Error(err, "Admitting the pod without its persistent pod state")
				return server.Allowed("persistent pod state not applied: " + err.Error())
			}
			if body == nil {
				return server.Allowed()
			}
			return server.Patched(body)
		}),
	}
}

func (l Lookups) patch(ctx context.Context, req *admissionv1.AdmissionRequest) ([]byte, error) {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return nil, fmt.Errorf("decoding the pod: %w", err)
	}
	group, owner, ok := Owner(pod)
	if !ok || pod.Name == "" {
		return nil, nil
	}
	ns := req.Namespace
	list, err := l.States.PersistentPodStates(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("listing the PersistentPodStates of %s: %w", ns, err)
	}
	pps := Select(list.Items, group, owner)
	if pps == nil {
		return nil, nil
	}
	state, ok := pps.Status.PodStates[pod.Name]
	if !ok || len(state.NodeTopologyLabels) == 0 {
		return nil, nil
	}
	nodeGone := false
	if state.NodeName != "" {
		_, err := l.Nodes.Nodes().Get(ctx, state.NodeName, metav1.GetOptions{ResourceVersion: "0"})
		switch {
		case apierrors.IsNotFound(err):
			nodeGone = true
		case err != nil:
			return nil, fmt.Errorf("reading node %s: %w", state.NodeName, err)
		}
	}
	ops := Patch(pod, pps.Name, Steer(&pps.Spec, state, nodeGone))
	if len(ops) == 0 {
		return nil, nil
	}
	klog.FromContext(ctx).V(3).Info("Steering the pod to its recorded topology", "persistentPodState", pps.Name, "node", state.NodeName, "nodeGone", nodeGone)
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	return body, nil
}
