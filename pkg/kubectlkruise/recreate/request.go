package recreate

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// maxNameLength is the longest object name the API server accepts.
const maxNameLength = 253

func randomSuffix() string { return utilrand.String(5) }

// request is the ContainerRecreateRequest the flags describe. Only the
// container names are set: kruise fills in each container's preStop hook,
// ports and running instance from the pod when it admits the request, and
// refuses a request that sets them itself.
func (o *Options) request(pod *corev1.Pod) *appsv1beta1.ContainerRecreateRequest {
	name := o.Name
	if name == "" {
		suffix := "-" + o.suffix()
		prefix := pod.Name
		if len(prefix)+len(suffix) > maxNameLength {
			prefix = prefix[:maxNameLength-len(suffix)]
		}
		name = prefix + suffix
	}
	strategy := &appsv1beta1.ContainerRecreateRequestStrategy{
		FailurePolicy:   appsv1beta1.ContainerRecreateRequestFailurePolicyFail,
		OrderedRecreate: o.Ordered,
		ForceRecreate:   o.Force,
	}
	if o.TerminationGracePeriod >= 0 {
		strategy.TerminationGracePeriodSeconds = &o.TerminationGracePeriod
	}
	if o.UnreadyGracePeriod >= 0 {
		strategy.UnreadyGracePeriodSeconds = &o.UnreadyGracePeriod
	}
	crr := &appsv1beta1.ContainerRecreateRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "ContainerRecreateRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace},
		Spec: appsv1beta1.ContainerRecreateRequestSpec{
			PodName:  pod.Name,
			Strategy: strategy,
		},
	}
	for _, c := range o.Containers {
		crr.Spec.Containers = append(crr.Spec.Containers, appsv1beta1.ContainerRecreateRequestContainer{Name: c})
	}
	if o.ActiveDeadline >= 0 {
		crr.Spec.ActiveDeadlineSeconds = &o.ActiveDeadline
	}
	return crr
}
