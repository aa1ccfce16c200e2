// Package ctrlbase is the skeleton kruise-controller's controllers share: the Config fields
// every one of them is built from besides its informers, the informer handlers that queue an
// object, and the frame of Run around the work loop. A controller embeds Config in its own and
// keeps only what is its kind's. It imports no controller.
package ctrlbase

import (
	"context"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/process/events"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Config is what every controller is built from besides its informers; embed it in the
// controller's Config.
type Config struct {
	Client       kubernetes.Interface
	KruiseClient versioned.Interface
	// Recorder records Events; nil makes one, started by Run.
	Recorder record.EventRecorder
	// Clock reads the time and times the queue's delays; nil is the real clock.
	Clock clock.WithTicker
}

// ClockOrReal is Clock, or the real clock when it is nil.
func (c Config) ClockOrReal() clock.WithTicker {
	if c.Clock == nil {
		return clock.RealClock{}
	}
	return c.Clock
}

// Handlers are the informer handlers that call changed on an add and on an update (with the
// new object) and deleted on a delete.
func Handlers(changed, deleted func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, cur any) { changed(cur) },
		DeleteFunc: deleted,
	}
}

// Run is the frame of a controller's Run: it runs n workers of loop until ctx ends, with
// *rec set (to a new recorder when nil, flushed and stopped once the workers return), and
// shuts the queue down. logValues are logged with the start.
func Run(ctx context.Context, client kubernetes.Interface, rec *record.EventRecorder, loop workers.Loop, n int, logValues ...any) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer loop.Queue.ShutDown()
	return events.While(ctx, client, rec, func() {
		klog.FromContext(ctx).Info("Started workers", append([]any{"workers", n}, logValues...)...)
		loop.Run(ctx, n)
	})
}
