package expectations

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// webAt is the pod ns/web-a at resourceVersion rv.
func webAt(rv string) *corev1.Pod {
	return gen.Pod("web-a", gen.SetPodNamespace("ns"), gen.SetPodUID("uid-a"), gen.SetPodResourceVersion(rv))
}

func TestResourceVersions(t *testing.T) {
	type call struct {
		expect, observe, forget string // resource versions; "" skips
		wait                    time.Duration
	}
	tests := []struct {
		name        string
		calls       []call
		cached      string
		want        bool
		wantRecheck time.Duration
		wantDropped uint64
	}{
		{name: "nothing expected", cached: "5", want: true},
		{name: "the cache is behind the write", calls: []call{{expect: "10"}}, cached: "9", wantRecheck: timeout},
		{name: "the cache shows the write", calls: []call{{expect: "10"}}, cached: "10", want: true},
		{name: "the cache is past the write", calls: []call{{expect: "10"}}, cached: "11", want: true},
		{name: "numbers, not strings, are compared", calls: []call{{expect: "9"}}, cached: "10", want: true},
		{name: "an informer event met it", calls: []call{{expect: "10"}, {observe: "12"}}, cached: "9", want: true},
		{name: "an older informer event did not", calls: []call{{expect: "10"}, {observe: "8"}}, cached: "9", wantRecheck: timeout},
		{name: "the newest write is awaited", calls: []call{{expect: "10"}, {expect: "20"}, {expect: "15"}}, cached: "15", wantRecheck: timeout},
		{name: "a deleted object awaits nothing", calls: []call{{expect: "10"}, {forget: "x"}}, cached: "9", want: true},
		{name: "a version that is not a number sets nothing", calls: []call{{expect: "abc"}}, cached: "1", want: true},
		{name: "a cached version that is not a number cannot be ordered and holds nothing back", calls: []call{{expect: "10"}}, cached: "abc", want: true},
		{
			name:  "waiting",
			calls: []call{{expect: "10"}, {wait: 2 * time.Minute}}, cached: "9", wantRecheck: 3 * time.Minute,
		},
		{
			name:  "a newer write restarts the timeout",
			calls: []call{{expect: "10"}, {wait: 4 * time.Minute}, {expect: "11"}, {wait: 2 * time.Minute}}, cached: "9", wantRecheck: 3 * time.Minute,
		},
		{
			name:  "after the timeout a lost event no longer holds the object back",
			calls: []call{{expect: "10"}, {wait: timeout}}, cached: "9", want: true, wantDropped: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			r := NewResourceVersions(clk, timeout)
			for _, c := range tt.calls {
				if c.expect != "" {
					r.Expect(webAt(c.expect))
				}
				if c.observe != "" {
					r.Observe(webAt(c.observe))
				}
				if c.forget != "" {
					r.Forget(webAt(c.forget))
				}
				clk.SetTime(clk.Now().Add(c.wait))
			}
			ok, recheck := r.Satisfied(context.Background(), webAt(tt.cached))
			assert.Equal(t, tt.want, ok, "satisfied")
			assert.Equal(t, tt.wantRecheck, recheck, "recheck")
			assert.Equal(t, tt.wantDropped, r.TimedOut(), "dropped")
		})
	}
}

func TestResourceVersionsAreKeyedByUID(t *testing.T) {
	r := NewResourceVersions(clocktesting.NewFakePassiveClock(t0), timeout)
	r.Expect(webAt("10"))
	recreated := gen.PodFrom(webAt("3"), gen.SetPodUID("uid-new"))
	ok, _ := r.Satisfied(context.Background(), recreated)
	assert.True(t, ok, "a re-created object of the same name is another object")
	ok, _ = r.Satisfied(context.Background(), webAt("3"))
	assert.False(t, ok)
}

func TestResourceVersionsTimeoutIsLogged(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	clk := clocktesting.NewFakePassiveClock(t0)
	r := NewResourceVersions(clk, timeout)
	r.Expect(webAt("10"))
	clk.SetTime(t0.Add(timeout))
	ok, _ := r.Satisfied(ctx, webAt("9"))
	require.True(t, ok)
	entries := logger.GetSink().(ktesting.Underlier).GetBuffer().Data()
	require.Len(t, entries, 1)
	assert.Equal(t, []any{
		"object", klog.KRef("ns", "web-a"), "uid", types.UID("uid-a"), "expected", uint64(10),
		"cached", "9", "timeout", timeout,
	}, entries[0].ParameterKVList)
	ok, _ = r.Satisfied(ctx, webAt("9"))
	assert.True(t, ok, "dropped, not re-armed")
	assert.Equal(t, uint64(1), r.TimedOut(), "counted once")
}

func TestDeletedObject(t *testing.T) {
	pod := webAt("1")
	got, ok := DeletedObject(cache.DeletedFinalStateUnknown{Key: "ns/web-a", Obj: pod})
	require.True(t, ok)
	r := NewResourceVersions(clocktesting.NewFakePassiveClock(t0), timeout)
	r.Expect(webAt("10"))
	r.Forget(got)
	ok, _ = r.Satisfied(context.Background(), webAt("9"))
	assert.True(t, ok, "the tombstone's object is forgotten")

	_, ok = DeletedObject(nil)
	assert.False(t, ok)
}

// TestResourceVersionsConcurrent has writers expect while informers
// observe and workers ask; run it with -race.
func TestResourceVersionsConcurrent(t *testing.T) {
	r := NewResourceVersions(clocktesting.NewFakePassiveClock(t0), timeout)
	const objects, writes = 8, 100
	pod := func(o, v int) *corev1.Pod {
		return gen.Pod(fmt.Sprintf("web-%d", o), gen.SetPodUID(types.UID(fmt.Sprint(o))), gen.SetPodResourceVersion(fmt.Sprint(v)))
	}
	var wg sync.WaitGroup
	for o := range objects {
		wg.Add(3)
		go func() {
			defer wg.Done()
			for v := 1; v <= writes; v++ {
				r.Expect(pod(o, v))
			}
		}()
		go func() {
			defer wg.Done()
			for v := 1; v <= writes; v++ {
				r.Observe(pod(o, v))
			}
		}()
		go func() {
			defer wg.Done()
			for v := 1; v <= writes; v++ {
				r.Satisfied(context.Background(), pod(o, v))
			}
		}()
	}
	wg.Wait()
	for o := range objects {
		ok, _ := r.Satisfied(context.Background(), pod(o, writes))
		assert.True(t, ok, "the last write is seen")
		ok, _ = r.Satisfied(context.Background(), pod(o, writes-1))
		assert.True(t, ok, "and nothing is awaited any more")
	}
	assert.Zero(t, r.TimedOut())
}
