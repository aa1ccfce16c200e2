package imagepulljob

import (
	"sync"
)

// plan is a job's latest decision: which nodes carry its request, and the
// request itself. Plans are replaced whole, never modified once published.
type plan struct {
	key  string
	uid  string
	repo string
	tag  string
	// finished: the job completed or is being deleted; no node keeps its request.
	finished bool
	// generation of the job the plan was made from.
	generation int64
	// nodes maps each node that should carry the request to the tag version
	// to re-pull from: when the tag's version on that node is still this
	// value, the node sync bumps it (0: no re-pull asked).
	nodes   map[string]int64
	request request
	// full: the planned nodes whose NodeImage had no room for the request.
	full map[string]bool
}

// planStore holds the latest plan of each job (by "namespace/name") and,
// per node, the keys of the jobs whose plan names it. Job syncs publish
// plans and node syncs read them, from several workers at once: every
// method takes the store's lock. Its invariant: a node is indexed for a key
// exactly when the key's plan names the node, and no node is indexed with
// no key. A published plan is never modified, so callers may read one
// without the lock.
type planStore struct {
	mu     sync.RWMutex
	plans  map[string]*plan
	byNode map[string]map[string]bool
}

func newPlanStore() *planStore {
	return &planStore{plans: map[string]*plan{}, byNode: map[string]map[string]bool{}}
}

// set publishes p as the plan of key (nil removes it) and returns the
// nodes that the old or the new plan names.
func (s *planStore) set(key string, p *plan) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	touched := map[string]bool{}
	if old := s.plans[key]; old != nil {
		for n := range old.nodes {
			touched[n] = true
			if set := s.byNode[n]; set != nil {
				delete(set, key)
				if len(set) == 0 {
					delete(s.byNode, n)
				}
			}
		}
	}
	if p == nil {
		delete(s.plans, key)
		return touched
	}
	s.plans[key] = p
	for n := range p.nodes {
		touched[n] = true
		if s.byNode[n] == nil {
			s.byNode[n] = map[string]bool{}
		}
		s.byNode[n][key] = true
	}
	return touched
}

// get returns the plan of key, nil when there is none.
func (s *planStore) get(key string) *plan {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.plans[key]
}

// forNode lists the plans naming node, in no particular order.
func (s *planStore) forNode(node string) []*plan {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*plan, 0, len(s.byNode[node]))
	for key := range s.byNode[node] {
		out = append(out, s.plans[key])
	}
	return out
}
