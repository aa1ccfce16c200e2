// Package events builds kruise-controller's Event recorder (client-go's, on a
// scheme that knows core and apps.kruise.io objects, Events written through
// the core/v1 API and logged at verbosity 4).
package events

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	kruisescheme "github.com/nodekruise/kruise/pkg/client/clientset/versioned/scheme"
)

// NewRecorder returns a recorder that writes Events as component (on host,
// when not empty), logs them at verbosity 4, and a function that flushes and
// stops it. kruise-daemon has its own recorder (pkg/daemon/recorder).
func NewRecorder(ctx context.Context, client kubernetes.Interface, component, host string) (record.EventRecorder, func(), error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("building event scheme: %w", err)
	}
	if err := kruisescheme.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("building event scheme: %w", err)
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(4)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(scheme, corev1.EventSource{Component: component, Host: host}), b.Shutdown, nil
}

// Ensure sets *rec, when nil, to a kruise-controller recorder and returns the
// function that stops it (a no-op when *rec was already set, e.g. by a test).
func Ensure(ctx context.Context, client kubernetes.Interface, rec *record.EventRecorder) (func(), error) {
	if *rec != nil {
		return func() {}, nil
	}
	r, stop, err := NewRecorder(ctx, client, "kruise-controller", "")
	if err != nil {
		return nil, err
	}
	*rec = r
	return stop, nil
}

// While runs run with *rec set, to a new kruise-controller recorder when it
// is nil (Ensure), and flushes and stops that recorder once run returns:
// the frame of every controller's Run.
func While(ctx context.Context, client kubernetes.Interface, rec *record.EventRecorder, run func()) error {
	stop, err := Ensure(ctx, client, rec)
	if err != nil {
		return err
	}
	defer stop()
	run()
	return nil
}
