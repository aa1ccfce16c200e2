// Package broadcast builds an Event recorder on any sink and scheme. It is
// apart from package events, whose recorder knows every built-in kind,
// because importing client-go's clientset scheme would link and initialise
// every API group into kruise-daemon (see pkg/daemon/kube).
package broadcast

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// NewRecorder returns a recorder that writes Events to sink as component (on
// host, when not empty), logs them at verbosity 4, and the function that
// flushes and stops it. scheme must know the kinds of the objects Events are
// recorded on.
func NewRecorder(ctx context.Context, sink record.EventSink, scheme *runtime.Scheme, component, host string) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(4)
	b.StartRecordingToSink(sink)
	return b.NewRecorder(scheme, corev1.EventSource{Component: component, Host: host}), b.Shutdown
}
