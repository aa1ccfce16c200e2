package imagepulljob

import "sync"

// refusals records, per node, the jobs (by key) whose request the node's
// last sync left out for lack of room, and why (budget.go). Node syncs write
// it and job syncs read it, from several workers at once: every method takes
// its lock. A node is recorded only while some job is left out of it.
type refusals struct {
	mu     sync.RWMutex
	byNode map[string]map[string]string
}

func newRefusals() *refusals {
	return &refusals{byNode: map[string]map[string]string{}}
}

// set records which jobs the last sync of node left out, and why (nil or
// empty: none), and returns the keys of the jobs for which that changed: left
// out now and not before, or for another reason, or no longer left out. The
// map refused is kept; the caller must not modify it afterwards.
func (r *refusals) set(node string, refused map[string]string) map[string]bool {
	r.mu.Lock()
	old := r.byNode[node]
	if len(refused) == 0 {
		delete(r.byNode, node)
	} else {
		r.byNode[node] = refused
	}
	r.mu.Unlock()
	changed := map[string]bool{}
	for key, why := range refused {
		if was, ok := old[key]; !ok || was != why {
			changed[key] = true
		}
	}
	for key := range old {
		if _, still := refused[key]; !still {
			changed[key] = true
		}
	}
	return changed
}

// get says why the last sync of node left the job key out, if it did.
func (r *refusals) get(node, key string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	why, ok := r.byNode[node][key]
	return why, ok
}

// setRefusals records the refusals of node's last sync and queues the jobs
// for which they changed: their status counts the node differently.
func (c *Controller) setRefusals(node string, refused map[string]string) {
	for key := range c.refusals.set(node, refused) {
		c.jobQueue.Add(key)
	}
}
