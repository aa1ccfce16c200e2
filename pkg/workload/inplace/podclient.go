package inplace

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// PodClient is what the Updater needs of the API server.
type PodClient interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	UpdatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// PatchPodStatus applies a strategic merge patch to the pod's status subresource.
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	// ResizePod applies a strategic merge patch to the pod's resize subresource (Kubernetes
	// 1.33+; the only way to change the resources of a running pod's containers).
	ResizePod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
}

// NewPodClient is a PodClient on a client-go clientset.
func NewPodClient(c kubernetes.Interface) PodClient { return kubePods{c} }

type kubePods struct{ c kubernetes.Interface }

func (k kubePods) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return k.c.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (k kubePods) UpdatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return k.c.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
}

func (k kubePods) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	return k.c.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

func (k kubePods) ResizePod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	return k.c.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
}

// ResizePatch is the resize subresource patch that gives the named containers of pod the
// resources asked, for a workload that writes its own update (the SidecarSet's upgrade).
func ResizePatch(pod *corev1.Pod, resize map[string]corev1.ResourceRequirements) ([]byte, error) {
	return resizePatch(pod, resize)
}

// resizePatch is the resize subresource patch that gives the named containers of pod the
// resources asked. It carries the pod's resourceVersion, so that the update written after it
// (with the version the resize returns) is known to rest on the pod as read.
func resizePatch(pod *corev1.Pod, resize map[string]corev1.ResourceRequirements) ([]byte, error) {
	type containerResources struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources"`
	}
	containers := make([]containerResources, 0, len(resize))
	for _, name := range sortedKeys(resize) {
		r := resize[name]
		containers = append(containers, containerResources{Name: name,
			Resources: corev1.ResourceRequirements{Limits: r.Limits, Requests: r.Requests}})
	}
	data, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"spec":     map[string]any{"containers": containers},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the resize patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return data, nil
}
