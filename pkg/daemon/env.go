package daemon

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodekruise/kruise/pkg/cri"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
)

// env is what the components are built from: the clients and settings, the
// process's one Event recorder and metrics registry, and the container runtime once the cri
// component has connected to it. Entries are built one at a time, so env
// needs no lock.
type env struct {
	deps
	opts *Options
	// recorder records every component's Events (one queue, one
	// correlation cache); it is flushed once everything has stopped.
	recorder recorder.EventRecorder
	// metrics is where components register their collectors, served on
	// /metrics.
	metrics prometheus.Registerer
	// runtime is the node's container runtime; the cri component sets it,
	// so the components listed after it can use it.
	runtime cri.Runtime
}

// register registers the collectors of a component.
func (e *env) register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := e.metrics.Register(c); err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	return nil
}
