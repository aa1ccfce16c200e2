package daemon

import (
	"context"

	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/nodekruise/kruise/pkg/daemon/crrexec"
	"github.com/nodekruise/kruise/pkg/daemon/envrestart"
	"github.com/nodekruise/kruise/pkg/process/features"
)

// envRestartWorkers sync pods in parallel; a sync is one CRI status call
// per container that reads env from metadata, and the stops run apart.
const envRestartWorkers = 2

// withEnvRestart is on while the feature gate InPlaceUpdateEnvFromMetadata
// is.
func withEnvRestart(e *env) bool {
	return e.featureGate().Enabled(features.InPlaceUpdateEnvFromMetadata)
}

// featureGate is the gate the daemon was started with.
func (e *env) featureGate() featuregate.FeatureGate {
	if e.features != nil {
		return e.features
	}
	return features.DefaultFeatureGate
}

// buildEnvRestarter makes the env-from-metadata restarter. It reads this
// node's pods through the shared informer and stops containers through
// the CRR executor's Stopper: the same preStop hook and graceful stop.
func buildEnvRestarter(_ context.Context, e *env) (*component, error) {
	metrics := envrestart.NewMetrics()
	if err := e.register(metrics.Collectors()...); err != nil {
		return nil, err
	}
	rt := e.runtime
	r, err := envrestart.New(envrestart.Config{
		Pods:     e.nodePods(),
		Runtime:  rt,
		Stopper:  crrexec.NewStopper(rt, crrexec.NewRunner(rt), clock.RealClock{}),
		Recorder: e.recorder,
		Metrics:  metrics,
	})
	if err != nil {
		return nil, err
	}
	return &component{
		informers: []informer{{name: "pods", syncer: e.nodePods()}},
		run: func(ctx context.Context) error {
			return r.Run(ctx, envRestartWorkers)
		},
	}, nil
}
