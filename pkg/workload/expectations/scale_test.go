package expectations

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/test/unit/gen"
)

const timeout = 5 * time.Minute

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// step is one call a test makes on a Scale.
type step func(*Scale, *clocktesting.FakePassiveClock)

func expect(action Action, resource Resource, names ...string) step {
	return func(s *Scale, _ *clocktesting.FakePassiveClock) { s.Expect("ns/web", action, resource, names...) }
}

func observe(action Action, resource Resource, name string) step {
	return func(s *Scale, _ *clocktesting.FakePassiveClock) { s.Observe("ns/web", action, resource, name) }
}

func wait(d time.Duration) step {
	return func(_ *Scale, clk *clocktesting.FakePassiveClock) { clk.SetTime(clk.Now().Add(d)) }
}

func TestScale(t *testing.T) {
	tests := []struct {
		name        string
		steps       []step
		want        bool
		wantRecheck time.Duration
		wantPending []Object
		wantDropped uint64
	}{{
		name: "nothing expected",
		want: true,
	}, {
		name:        "a creation not seen yet holds the owner",
		steps:       []step{expect(Create, Pods, "web-a", "web-b"), observe(Create, Pods, "web-a"), wait(time.Minute)},
		wantRecheck: 4 * time.Minute,
		wantPending: []Object{{Create, Pods, "web-b"}},
	}, {
		name:  "every creation seen",
		steps: []step{expect(Create, Pods, "web-a", "web-b"), observe(Create, Pods, "web-b"), observe(Create, Pods, "web-a")},
		want:  true,
	}, {
		name: "pods and PVCs of one name are apart, and so are creations and deletions",
		steps: []step{
			expect(Create, Pods, "web-a"), expect(Create, PersistentVolumeClaims, "web-a"), expect(Delete, Pods, "web-a"),
			observe(Create, Pods, "web-a"),
		},
		wantRecheck: timeout,
		wantPending: []Object{{Create, PersistentVolumeClaims, "web-a"}, {Delete, Pods, "web-a"}},
	}, {
		name:        "a deletion is met by its own event only",
		steps:       []step{expect(Delete, Pods, "web-a"), observe(Create, Pods, "web-a"), observe(Delete, Pods, "web-b")},
		wantRecheck: timeout,
		wantPending: []Object{{Delete, Pods, "web-a"}},
	}, {
		name:  "events of objects nobody awaits are ignored",
		steps: []step{observe(Create, Pods, "web-x"), observe(Delete, Pods, "web-y")},
		want:  true,
	}, {
		name:  "a failed write is observed at once",
		steps: []step{expect(Create, Pods, "web-a"), observe(Create, Pods, "web-a")},
		want:  true,
	}, {
		name:        "recheck is when the oldest times out",
		steps:       []step{expect(Create, Pods, "web-a"), wait(2 * time.Minute), expect(Create, Pods, "web-b"), wait(time.Minute)},
		wantRecheck: 2 * time.Minute,
		wantPending: []Object{{Create, Pods, "web-a"}, {Create, Pods, "web-b"}},
	}, {
		name:        "expecting again restarts the timeout",
		steps:       []step{expect(Create, Pods, "web-a"), wait(4 * time.Minute), expect(Create, Pods, "web-a"), wait(2 * time.Minute)},
		wantRecheck: 3 * time.Minute,
		wantPending: []Object{{Create, Pods, "web-a"}},
	}, {
		name:        "after the timeout a lost event no longer holds the owner; the rest still do",
		steps:       []step{expect(Create, Pods, "web-a"), wait(3 * time.Minute), expect(Delete, Pods, "web-b"), wait(2 * time.Minute)},
		wantRecheck: 3 * time.Minute,
		wantPending: []Object{{Delete, Pods, "web-b"}},
		wantDropped: 1,
	}, {
		name:        "all timed out",
		steps:       []step{expect(Create, Pods, "web-a", "web-b"), wait(timeout)},
		want:        true,
		wantDropped: 2,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			s := NewScale(clk, timeout)
			for _, step := range tt.steps {
				step(s, clk)
			}
			ok, recheck := s.Satisfied(context.Background(), "ns/web")
			assert.Equal(t, tt.want, ok, "satisfied")
			assert.Equal(t, tt.wantRecheck, recheck, "recheck")
			assert.Equal(t, tt.wantPending, nilIfEmpty(s.Pending("ns/web")), "pending")
			assert.Equal(t, tt.wantDropped, s.TimedOut(), "dropped")
		})
	}
}

func nilIfEmpty(objects []Object) []Object {
	if len(objects) == 0 {
		return nil
	}
	return objects
}

func TestScaleOwnersAreApart(t *testing.T) {
	s := NewScale(clocktesting.NewFakePassiveClock(t0), timeout)
	s.Expect("ns/web", Create, Pods, "pod-a")
	s.Observe("ns/db", Create, Pods, "pod-a")
	ok, _ := s.Satisfied(context.Background(), "ns/web")
	assert.False(t, ok, "another owner's event does not meet web's expectation")
	ok, _ = s.Satisfied(context.Background(), "ns/db")
	assert.True(t, ok)

	s.Forget("ns/web")
	ok, _ = s.Satisfied(context.Background(), "ns/web")
	assert.True(t, ok, "a forgotten owner awaits nothing")
}

func TestScaleTimeoutIsLoggedWithOwnerAndObjects(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	clk := clocktesting.NewFakePassiveClock(t0)
	s := NewScale(clk, timeout)
	s.Expect("ns/web", Create, Pods, "web-b", "web-a")
	s.Expect("ns/web", Delete, PersistentVolumeClaims, "data-web-c")

	clk.SetTime(t0.Add(timeout - time.Second))
	ok, _ := s.Satisfied(ctx, "ns/web")
	require.False(t, ok)
	assert.Empty(t, logger.GetSink().(ktesting.Underlier).GetBuffer().String(), "nothing dropped before the timeout")

	clk.SetTime(t0.Add(timeout))
	ok, _ = s.Satisfied(ctx, "ns/web")
	require.True(t, ok)
	assert.Equal(t, uint64(3), s.TimedOut())
	entries := logger.GetSink().(ktesting.Underlier).GetBuffer().Data()
	require.Len(t, entries, 1)
	assert.Equal(t, "Dropped expectations the informer did not meet in time", entries[0].Message)
	assert.Equal(t, []any{
		"owner", "ns/web", "timeout", timeout,
		"objects", []string{"create pods/web-a", "create pods/web-b", "delete persistentvolumeclaims/data-web-c"},
	}, entries[0].ParameterKVList)
}

func TestScaleObserveDeleted(t *testing.T) {
	pod := gen.Pod("web-a", gen.SetPodNamespace("ns"))
	tests := []struct {
		name   string
		event  any
		wantOK bool
	}{
		{"the deleted object", pod, true},
		{"a tombstone of a deletion the informer missed", cache.DeletedFinalStateUnknown{Key: "ns/web-a", Obj: pod}, true},
		{"something else", "ns/web-a", false},
		{"a tombstone of something else", cache.DeletedFinalStateUnknown{Key: "ns/web-a", Obj: "web-a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScale(clocktesting.NewFakePassiveClock(t0), timeout)
			s.Expect("ns/web", Delete, Pods, "web-a")
			assert.Equal(t, tt.wantOK, s.ObserveDeleted("ns/web", Pods, tt.event))
			ok, _ := s.Satisfied(context.Background(), "ns/web")
			assert.Equal(t, tt.wantOK, ok, "satisfied")
		})
	}
}

// TestScaleConcurrent has writers expect and observe while readers ask;
// run it with -race.
func TestScaleConcurrent(t *testing.T) {
	s := NewScale(clocktesting.NewFakePassiveClock(t0), timeout)
	const owners, pods = 8, 50
	var wg sync.WaitGroup
	for o := range owners {
		owner := fmt.Sprintf("ns/web-%d", o)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for p := range pods {
				name := fmt.Sprintf("pod-%d", p)
				s.Expect(owner, Create, Pods, name)
				s.Expect(owner, Delete, Pods, name)
				s.Observe(owner, Create, Pods, name)
				s.ObserveDeleted(owner, Pods, cache.DeletedFinalStateUnknown{Obj: gen.Pod(name)})
			}
		}()
		go func() {
			defer wg.Done()
			for range pods {
				s.Satisfied(context.Background(), owner)
				s.Pending(owner)
			}
		}()
	}
	wg.Wait()
	for o := range owners {
		ok, _ := s.Satisfied(context.Background(), fmt.Sprintf("ns/web-%d", o))
		assert.True(t, ok, "owner %d", o)
	}
	assert.Zero(t, s.TimedOut())
}
