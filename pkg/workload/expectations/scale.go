package expectations

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Resource names the kind of object an expectation is about.
type Resource string

// The resources workloads create and delete.
const (
	Pods                   Resource = "pods"
	PersistentVolumeClaims Resource = "persistentvolumeclaims"
)

// Action is what the controller expects to see happen to an object.
type Action string

// The actions a workload awaits.
const (
	Create Action = "create"
	Delete Action = "delete"
)

// Object is one object an owner waits for.
type Object struct {
	Action   Action
	Resource Resource
	Name     string
}

func (o Object) String() string {
	return fmt.Sprintf("%s %s/%s", o.Action, o.Resource, o.Name)
}

// Scale holds, per owner key (namespace/name of the workload, or any key
// the caller's queue uses), the creations and deletions it waits for.
//
// The protocol, as ReplicaSet's: Expect before the write, so the informer's
// event can never come first; if the write fails (or a delete finds the
// object gone), Observe at once, since no event will come. Observe a
// creation when the informer adds the object and a deletion when it
// deletes it (see ObserveDeleted for tombstones) or, as ReplicaSet does,
// when an update first shows the object's deletionTimestamp.
type Scale struct {
	clock   clock.PassiveClock
	timeout time.Duration

	mu sync.Mutex
	// pending holds, per owner, when each awaited object was expected.
	pending  map[string]map[Object]time.Time
	timedOut uint64
}

// NewScale returns a Scale whose expectations are dropped timeout after they
// were made.
func NewScale(clk clock.PassiveClock, timeout time.Duration) *Scale {
	return &Scale{clock: clk, timeout: timeout, pending: map[string]map[Object]time.Time{}}
}

// Expect records that owner is about to do action to the named objects.
// Expecting an object already awaited restarts its timeout.
func (s *Scale) Expect(owner string, action Action, resource Resource, names ...string) {
	if len(names) == 0 {
		return
	}
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	objects := s.pending[owner]
	if objects == nil {
		objects = make(map[Object]time.Time, len(names))
		s.pending[owner] = objects
	}
	for _, name := range names {
		objects[Object{Action: action, Resource: resource, Name: name}] = now
	}
}

// Observe records that the informer showed action done to the named
// object, or that it will not be (the write failed). An object not awaited
// is ignored.
func (s *Scale) Observe(owner string, action Action, resource Resource, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	objects := s.pending[owner]
	delete(objects, Object{Action: action, Resource: resource, Name: name})
	if len(objects) == 0 {
		delete(s.pending, owner)
	}
}

// ObserveDeleted observes the deletion of the object of an informer's
// delete event, which may be a cache.DeletedFinalStateUnknown. It returns
// false, observing nothing, when obj is neither.
func (s *Scale) ObserveDeleted(owner string, resource Resource, obj any) bool {
	object, ok := DeletedObject(obj)
	if ok {
		s.Observe(owner, Delete, resource, object.GetName())
	}
	return ok
}

// Satisfied reports whether owner awaits nothing, so it may scale again.
// Expectations older than the timeout are dropped first, and logged and
// counted (TimedOut). When owner still waits, recheck is how long until the
// oldest of its expectations times out: requeue the owner after it, so a
// lost event delays it by the timeout and no more.
func (s *Scale) Satisfied(ctx context.Context, owner string) (ok bool, recheck time.Duration) {
	now := s.clock.Now()
	s.mu.Lock()
	objects := s.pending[owner]
	var expired []Object
	for object, since := range objects {
		if now.Sub(since) >= s.timeout {
			expired = append(expired, object)
			delete(objects, object)
		} else if left := s.timeout - now.Sub(since); recheck == 0 || left < recheck {
			recheck = left
		}
	}
	if len(objects) == 0 {
		delete(s.pending, owner)
	}
	s.timedOut += uint64(len(expired))
	ok = len(objects) == 0
	s.mu.Unlock()

	if len(expired) > 0 {
		described := make([]string, 0, len(expired))
		for _, object := range expired {
			described = append(described, object.String())
		}
		slices.Sort(described)
		klog.FromContext(ctx).Info("Dropped expectations the informer did not meet in time",
			"owner", owner, "timeout", s.timeout, "objects", described)
	}
	return ok, recheck
}

// Pending returns what owner still waits for, sorted; timeouts are not
// applied.
func (s *Scale) Pending(owner string) []Object {
	s.mu.Lock()
	objects := make([]Object, 0, len(s.pending[owner]))
	for object := range s.pending[owner] {
		objects = append(objects, object)
	}
	s.mu.Unlock()
	slices.SortFunc(objects, func(a, b Object) int { return cmp.Compare(a.String(), b.String()) })
	return objects
}

// Forget drops everything owner waits for: call it when the owner is
// deleted.
func (s *Scale) Forget(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, owner)
}

// TimedOut returns how many expectations have been dropped on timeout
// since s was made, for a counter metric.
func (s *Scale) TimedOut() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timedOut
}
