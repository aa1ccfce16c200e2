package deletionprotection

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

// pageSize bounds one list response; a namespace of thousands of pods is
// read in a few pages.
const pageSize = 500

// APILookups reads from the API server: pods and claims with the typed
// client, a CRD's objects with the metadata-only client (their names and
// deletion timestamps are all that count, whatever their size).
type APILookups struct {
	Client   kubernetes.Interface
	Metadata metadata.Interface
}

var _ Lookups = APILookups{}

// Pods implements Lookups.
func (l APILookups) Pods(ctx context.Context, namespace string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := l.Client.CoreV1().Pods(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// Claims implements Lookups.
func (l APILookups) Claims(ctx context.Context, namespace string) ([]corev1.PersistentVolumeClaim, error) {
	var out []corev1.PersistentVolumeClaim
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := l.Client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// Objects implements Lookups.
func (l APILookups) Objects(ctx context.Context, gvr schema.GroupVersionResource) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := l.Metadata.Resource(gvr).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}
