package envrestart

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// memory is what the restarter remembers per pod (by queue key) between
// syncs. The decision to restart is made from the runtime every time; this
// only covers what the runtime cannot show yet: a stop under way (the
// container still runs its preStop hook) and the instances already stopped
// (the pod's status can name one a little longer). It also keeps Events
// from repeating. A restarted daemon starts with none of it and is still
// safe: an instance it stopped is not running any more.
type memory struct {
	mu   sync.Mutex
	pods map[string]*podMemory
}

type podMemory struct {
	uid types.UID
	// stopping and stopped are bare container IDs.
	stopping map[string]bool
	stopped  map[string]bool
	// told is, per container name, the problem last reported in an Event.
	told map[string]string
	// staleSince is, per bare container ID, when the instance was first found with
	// out-of-date env.
	staleSince map[string]time.Time
}

func newMemory() *memory { return &memory{pods: map[string]*podMemory{}} }

// of returns the pod's memory, fresh when the key now names another pod
// (same name, new UID). The caller holds mu.
func (m *memory) of(key string, uid types.UID) *podMemory {
	p, ok := m.pods[key]
	if !ok || p.uid != uid {
		p = &podMemory{uid: uid, stopping: map[string]bool{}, stopped: map[string]bool{}, told: map[string]string{},
			staleSince: map[string]time.Time{}}
		m.pods[key] = p
	}
	return p
}

// busy reports whether this daemon is stopping, or has stopped, instance id.
func (m *memory) busy(key string, uid types.UID, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(key, uid)
	return p.stopping[id] || p.stopped[id]
}

// beginStop marks a stop of id as under way; false when one is under way
// already or id was stopped before: then no other may start.
func (m *memory) beginStop(key string, uid types.UID, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(key, uid)
	if p.stopping[id] || p.stopped[id] {
		return false
	}
	p.stopping[id] = true
	return true
}

// endStop records the end of the stop of id; stopped says it succeeded.
func (m *memory) endStop(key string, uid types.UID, id string, stopped bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(key, uid)
	delete(p.stopping, id)
	if stopped {
		p.stopped[id] = true
	}
}

// tell records msg as the problem of container and reports whether it is
// new, i.e. whether to record an Event.
func (m *memory) tell(key string, uid types.UID, container, msg string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(key, uid)
	if p.told[container] == msg {
		return false
	}
	p.told[container] = msg
	return true
}

// staleFor records that instance id is out of date (from now, the first time) and returns how
// long it must still wait before it is stopped; 0 once it has been stale for delay.
func (m *memory) staleFor(key string, uid types.UID, id string, now time.Time, delay time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(key, uid)
	since, ok := p.staleSince[id]
	if !ok {
		p.staleSince[id] = now
		since = now
	}
	if left := since.Add(delay).Sub(now); left > 0 {
		return left
	}
	return 0
}

// settle clears the problem of container: its env is up to date.
func (m *memory) settle(key string, uid types.UID, container string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.of(key, uid).told, container)
}

// has reports whether anything is remembered of the pod.
func (m *memory) has(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.pods[key]
	return ok
}

// forget drops what is remembered of a pod that is gone or no longer under
// an env update, except the stops still under way: until they end, their
// instances must not be stopped again.
func (m *memory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pods[key]
	if !ok {
		return
	}
	if len(p.stopping) == 0 {
		delete(m.pods, key)
		return
	}
	p.stopped = map[string]bool{}
	p.told = map[string]string{}
}
