package daemon

import (
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// informerSet runs a few informers together, as an informer factory does
// for the informers it made: the daemon builds its node-scoped informers
// one by one (package kube) rather than through client-go's factories,
// which link every API group.
type informerSet struct {
	informers []cache.SharedIndexInformer
	wg        wait.Group
}

func newInformerSet(informers ...cache.SharedIndexInformer) *informerSet {
	return &informerSet{informers: informers}
}

// start runs every informer until stop is closed.
func (s *informerSet) start(stop <-chan struct{}) {
	for _, inf := range s.informers {
		s.wg.StartWithChannel(stop, inf.Run)
	}
}

// synced reports whether every informer has synced.
func (s *informerSet) synced() bool {
	for _, inf := range s.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// shutdown waits for the informers started by start to return (their stop
// channel must be closed).
func (s *informerSet) shutdown() { s.wg.Wait() }
