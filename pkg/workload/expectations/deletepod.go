package expectations

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// DeletePod deletes pod for the workload owner, the pod as read only (its UID a precondition, so
// that a pod recreated under the name is not taken with it). The deletion is expected before it
// is sent, so that a cache quicker than the reply never shows the pod gone unexpected, and
// observed at once when it fails, so that the workload does not wait for a deletion that will not
// come. The API server's error is returned as it is: NotFound and Conflict say the pod read is gone.
func (s *Scale) DeletePod(ctx context.Context, pods corev1client.PodsGetter, owner string, pod *corev1.Pod) error {
	s.Expect(owner, Delete, Pods, pod.Name)
	err := pods.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil {
		s.Observe(owner, Delete, Pods, pod.Name)
	}
	return err
}
