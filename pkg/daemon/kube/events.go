package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// eventSink writes core/v1 Events in their own namespace, as the recorder
// asks: it creates them and merge-patches the count of repeated ones.
type eventSink struct{ core rest.Interface }

func (s eventSink) Create(ctx context.Context, e *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.core.Post().UseProtobufAsDefault().Namespace(e.Namespace).Resource("events").
		Body(e).Do(ctx).Into(out)
	return out, err
}

func (s eventSink) Patch(ctx context.Context, namespace, name string, data []byte) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.core.Patch(types.MergePatchType).UseProtobufAsDefault().Namespace(namespace).
		Resource("events").Name(name).Body(data).Do(ctx).Into(out)
	return out, err
}
