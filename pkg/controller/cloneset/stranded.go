package cloneset

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodekruise/kruise/pkg/process/workers"
)

// Stranded claims: the PVCs of an instance ID whose pod could not be created (quota, Pod
// Security, a policy refusing it). With PVC reuse off, cleanupClaims deletes the PVCs no pod
// holds; a pass doing so succeeded, which reset the queue's backoff, and the next pass created
// the PVCs again for a new ID: PVCs created and deleted in a loop for as long as the pods were
// refused. The controller remembers those IDs instead: their PVCs are kept, the next creation
// takes them first (so its PVCs are already there), and a failing pass keeps failing, so the
// queue backs off. An ID is forgotten when a pod takes it, when the CloneSet no longer wants that
// many new pods (its PVCs are then cleaned up as any other), or when the CloneSet goes.

// strandedClaims holds the stranded instance IDs of each CloneSet, oldest first, at most a
// burst of them (no pass creates more), so its memory is bounded by the CloneSets.
type strandedClaims struct {
	mu  sync.Mutex
	ids map[string][]string
}

func newStrandedClaims() *strandedClaims { return &strandedClaims{ids: map[string][]string{}} }

// add remembers id for CloneSet key. It is called beside other creations of the same pass.
func (s *strandedClaims) add(key, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.ids[key]
	if len(ids) >= workers.Burst || slices.Contains(ids, id) {
		return
	}
	s.ids[key] = append(ids, id)
}

// settle keeps, for CloneSet key, the IDs SettleStranded keeps and returns them.
func (s *strandedClaims) settle(key string, held sets.Set[string], wanted int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := SettleStranded(s.ids[key], held, wanted)
	if len(kept) == 0 {
		delete(s.ids, key)
		return nil
	}
	s.ids[key] = kept
	return slices.Clone(kept)
}

// forget drops what is remembered of CloneSet key (it is gone).
func (s *strandedClaims) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, key)
}

// SettleStranded is what is left of the stranded IDs ids once those a pod holds (held) are
// dropped, and no more than wanted of them: the new pods the CloneSet still wants. The oldest
// are kept.
func SettleStranded(ids []string, held sets.Set[string], wanted int) []string {
	var out []string
	for _, id := range ids {
		if len(out) >= wanted {
			break
		}
		if !held.Has(id) {
			out = append(out, id)
		}
	}
	return out
}
