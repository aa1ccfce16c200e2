package enhancedliveness

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// workload is n Ready pods p0..pn-1 with a healthy container "app".
func workload(n, maxUnavailable int) Workload {
	w := Workload{MaxUnavailable: maxUnavailable}
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		w.Pods = append(w.Pods, Pod{UID: types.UID("uid-" + name), Name: name, Ready: true, Containers: []Container{{Name: "app"}}})
	}
	return w
}

// fail marks pod i's container "app" Failed since at.
func fail(w *Workload, i int, at time.Time) {
	w.Pods[i].Containers = []Container{{Name: "app", Failed: true, Since: at}}
}

func restarted(d Decision) []string {
	var out []string
	for _, p := range d.Restart {
		out = append(out, string(p.Pod))
	}
	return out
}

func TestDecideRestartsAFailedContainer(t *testing.T) {
	w := workload(10, 1)
	fail(&w, 3, t0)
	d := Decide(w, t0.Add(time.Second))
	require.Len(t, d.Restart, 1)
	assert.Equal(t, Plan{Pod: "uid-p3", Containers: []string{"app"}, Since: t0}, d.Restart[0])
	assert.Empty(t, d.Held)
	assert.Zero(t, d.RequeueAfter)
}

// The budget: at most MaxUnavailable pods restarting at once, and a Ready pod only while the
// unavailable ones with it stay within it.
func TestDecideBudget(t *testing.T) {
	t.Run("one at a time", func(t *testing.T) {
		w := workload(10, 1)
		fail(&w, 1, t0)
		fail(&w, 2, t0.Add(time.Second))
		d := Decide(w, t0.Add(time.Minute))
		assert.Equal(t, []string{"uid-p1"}, restarted(d), "the oldest failure first")
		assert.Equal(t, map[string]int{HeldBudget: 1}, d.Held)
	})
	t.Run("in-flight requests use the budget", func(t *testing.T) {
		w := workload(10, 2)
		w.Pods[0].Restarting = true
		w.Pods[0].Ready = false
		fail(&w, 0, t0) // restarting: never a second request
		fail(&w, 1, t0)
		fail(&w, 2, t0)
		d := Decide(w, t0.Add(time.Minute))
		assert.Equal(t, []string{"uid-p1"}, restarted(d))
		assert.Equal(t, map[string]int{HeldBudget: 1}, d.Held)
	})
	t.Run("pods not Ready use the budget", func(t *testing.T) {
		w := workload(10, 2)
		w.Pods[5].Ready, w.Pods[6].Ready = false, false
		fail(&w, 1, t0)
		d := Decide(w, t0.Add(time.Minute))
		assert.Empty(t, d.Restart)
		assert.Equal(t, map[string]int{HeldBudget: 1}, d.Held)
	})
	t.Run("a pod not Ready costs no availability, goes first, and still counts as restarting", func(t *testing.T) {
		w := workload(10, 2)
		w.Pods[5].Ready, w.Pods[6].Ready = false, false
		fail(&w, 1, t0)
		fail(&w, 5, t0.Add(time.Second))
		fail(&w, 6, t0.Add(2*time.Second))
		d := Decide(w, t0.Add(time.Minute))
		assert.Equal(t, []string{"uid-p5", "uid-p6"}, restarted(d))
		assert.Equal(t, map[string]int{HeldBudget: 1}, d.Held)
	})
	t.Run("many restart at once when the budget allows", func(t *testing.T) {
		w := workload(20, 5)
		for i := range 4 {
			fail(&w, i, t0)
		}
		assert.Len(t, Decide(w, t0.Add(time.Minute)).Restart, 4)
	})
}

func TestMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		value string
		total int
		want  int
		bad   bool
	}{
		{"", 100, 10, false},
		{"", 19, 1, false}, // 10% of 19 = 1.9, rounded down
		{"", 9, 1, false},  // 0 rounds up to the minimum of 1
		{"", 0, 1, false},
		{"25%", 10, 2, false}, // 2.5 rounded down
		{"50%", 3, 1, false},
		{"100%", 7, 7, false},
		{"0%", 50, 1, false},
		{"3", 10, 3, false},
		{"0", 10, 1, false},
		{"20", 10, 20, false},
		{"x", 10, 1, true},
		{"-1", 10, 1, true},
		{"150%", 10, 1, true},
		{"1.5", 10, 1, true},
	} {
		got, err := MaxUnavailable(tc.value, tc.total)
		assert.Equal(t, tc.want, got, "%q of %d", tc.value, tc.total)
		assert.Equal(t, tc.bad, err != nil, "%q: %v", tc.value, err)
	}
}

func TestNextRestartBacksOff(t *testing.T) {
	var r Restart
	var delays []time.Duration
	at := t0
	for range 8 {
		r = NextRestart(r, at)
		delays = append(delays, r.Delay.Duration())
		at = at.Add(r.Delay.Duration()) // failing again as soon as allowed
	}
	assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second,
		5 * time.Minute, 5 * time.Minute, 5 * time.Minute}, delays)
	assert.Equal(t, BackoffBase, NextRestart(r, r.At.Add(BackoffReset)).Delay.Duration(), "10 minutes without a restart: from the start again")
	assert.Equal(t, BackoffMax, NextRestart(r, r.At.Add(BackoffReset-time.Second)).Delay.Duration(), "not yet reset")
}

func TestDecideBackoff(t *testing.T) {
	w := workload(10, 5)
	w.Pods[2].History = map[string]Restart{"app": {At: t0, Delay: 20}}
	fail(&w, 2, t0.Add(5*time.Second)) // a new failure after the restart
	d := Decide(w, t0.Add(8*time.Second))
	assert.Empty(t, d.Restart)
	assert.Equal(t, map[string]int{HeldBackoff: 1}, d.Held)
	assert.Equal(t, 12*time.Second, d.RequeueAfter, "requeued when the back-off ends, not before")

	d = Decide(w, t0.Add(20*time.Second))
	assert.Equal(t, []string{"uid-p2"}, restarted(d))
	assert.Zero(t, d.RequeueAfter)
}

// The window after a restart: until kruise-daemon sees the new container and resets the probe,
// the Failed state it shows is the one already answered.
func TestDecideWindowAfterRestart(t *testing.T) {
	w := workload(10, 5)
	w.Pods[2].History = map[string]Restart{"app": {At: t0, Delay: 10}}
	fail(&w, 2, t0.Add(-3*time.Second))
	d := Decide(w, t0.Add(time.Hour))
	assert.Empty(t, d.Restart, "the failure before the restart is not answered twice")
	assert.Empty(t, d.Held)
	fail(&w, 2, t0) // not newer either
	assert.Empty(t, Decide(w, t0.Add(time.Hour)).Restart)
	fail(&w, 2, t0.Add(time.Millisecond))
	assert.Len(t, Decide(w, t0.Add(time.Hour)).Restart, 1)
}

// More than half of the pods failing at once, and at least three: none is restarted.
func TestDecideSharedOutage(t *testing.T) {
	for _, tc := range []struct {
		pods, failing int
		hold          bool
	}{
		{pods: 10, failing: 6, hold: true},
		{pods: 10, failing: 5},
		{pods: 10, failing: 10, hold: true},
		{pods: 5, failing: 3, hold: true},
		{pods: 4, failing: 3, hold: true},
		{pods: 2, failing: 2}, // too few to tell; the budget paces them
		{pods: 1, failing: 1}, // a lone pod is healed
		{pods: 6, failing: 3}, // exactly half: not more than half
	} {
		w := workload(tc.pods, tc.pods)
		for i := range tc.failing {
			fail(&w, i, t0)
		}
		d := Decide(w, t0.Add(time.Minute))
		assert.Equal(t, tc.hold, d.SharedOutage, "%d of %d", tc.failing, tc.pods)
		assert.Equal(t, tc.failing, d.Failing)
		if tc.hold {
			assert.Empty(t, d.Restart)
			assert.Equal(t, map[string]int{HeldSharedOutage: tc.failing}, d.Held)
		} else {
			assert.Len(t, d.Restart, tc.failing)
		}
	}

	// Pods already restarted that fail again still count: the dependency is still down.
	w := workload(10, 10)
	for i := range 6 {
		fail(&w, i, t0)
		if i < 3 {
			w.Pods[i].History = map[string]Restart{"app": {At: t0.Add(time.Second), Delay: 10}}
		}
	}
	d := Decide(w, t0.Add(time.Minute))
	assert.True(t, d.SharedOutage)
	assert.Empty(t, d.Restart)
}

// Several failed containers of a pod go in one request; a healthy one does not.
func TestDecideContainersOfAPod(t *testing.T) {
	w := workload(3, 1)
	w.Pods[0].Containers = []Container{{Name: "a", Failed: true, Since: t0}, {Name: "b"}, {Name: "c", Failed: true, Since: t0.Add(time.Second)}}
	w.Pods[0].History = map[string]Restart{"c": {At: t0.Add(-time.Second), Delay: 60}}
	d := Decide(w, t0.Add(2*time.Second))
	require.Len(t, d.Restart, 1)
	assert.Equal(t, []string{"a"}, d.Restart[0].Containers, "c is backing off")
	assert.Equal(t, t0, d.Restart[0].Since)
	assert.Equal(t, 57*time.Second, d.RequeueAfter)
}

// TestDecideSimulated measures the rule over time: 20 pods, 8 of them failing (less than half),
// the default budget (10% of 20 = 2). A restart keeps its request in flight 5 s, then the pod is
// not Ready for 10 s more, then healthy. Decided every second: never more than 2 pods unavailable
// at once, every failing pod healed, in 4 rounds of 15 s.
func TestDecideSimulated(t *testing.T) {
	budget, err := MaxUnavailable("", 20)
	require.NoError(t, err)
	require.Equal(t, 2, budget)
	w := workload(20, budget)
	for i := range 8 {
		fail(&w, i, t0)
	}
	restartedAt := map[int]time.Time{}
	maxUnavailable, healedAt := 0, time.Duration(0)
	for s := 0; s <= 300; s++ {
		now := t0.Add(time.Duration(s) * time.Second)
		unavailable, failing := 0, 0
		for i := range w.Pods {
			p := &w.Pods[i]
			if at, ok := restartedAt[i]; ok {
				p.Restarting = now.Sub(at) < 5*time.Second
				p.Ready = now.Sub(at) >= 15*time.Second
				if !p.Restarting {
					p.Containers = []Container{{Name: "app", Since: now}} // the daemon reset it; it passes
				}
			}
			if p.Restarting || !p.Ready {
				unavailable++
			}
			if len(p.Containers) > 0 && p.Containers[0].Failed {
				failing++
			}
		}
		maxUnavailable = max(maxUnavailable, unavailable)
		if failing == 0 && unavailable == 0 && healedAt == 0 {
			healedAt = now.Sub(t0)
		}
		d := Decide(w, now)
		assert.False(t, d.SharedOutage)
		for _, plan := range d.Restart {
			for i := range w.Pods {
				if w.Pods[i].UID == plan.Pod {
					restartedAt[i] = now
					w.Pods[i].History = map[string]Restart{"app": NextRestart(w.Pods[i].History["app"], now)}
				}
			}
		}
	}
	assert.Equal(t, 2, maxUnavailable, "never more than the budget")
	assert.Len(t, restartedAt, 8, "each failing pod restarted once")
	assert.Equal(t, 60*time.Second, healedAt, "4 rounds of 2 pods, 15 s each")
	t.Logf("20 pods, 8 failing, budget %d: at most %d unavailable at once, all healed after %s", budget, maxUnavailable, healedAt)
}
