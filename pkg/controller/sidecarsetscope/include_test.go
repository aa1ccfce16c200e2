package sidecarsetscope

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// A SidecarSet being admitted is routed before it is stored: its term is in the condition and it
// is pending, beside the SidecarSets stored, and a paused one changes nothing.
func TestIncludeRoutesASidecarSetBeforeItIsStored(t *testing.T) {
	web := ss("web", matchLabels("app", "web"))
	f := newFixture(t, []runtime.Object{chartConfiguration()}, web)
	in := &Includer{Client: f.kube, SidecarSets: f.kruise.AppsV1beta1()}
	mesh := ss("mesh", matchLabels("app", "web"))
	mesh.Generation = 1
	require.NoError(t, in.Include(context.Background(), mesh))

	cfg := f.stored(t)
	assert.Equal(t, Expression([]*appsv1beta1.SidecarSet{web}), cfg.Webhooks[0].MatchConditions[1].Expression,
		"the same selector as a stored SidecarSet: the same condition")
	pending, err := sidecarrules.ParsePending(cfg.Annotations)
	require.NoError(t, err)
	require.Contains(t, pending, "mesh", "pending by name, even with a term already routed")
	assert.Equal(t, int64(1), pending["mesh"].Generation)

	db := ss("db", matchLabels("app", "db"))
	require.NoError(t, in.Include(context.Background(), db))
	cfg = f.stored(t)
	assert.Equal(t, Expression([]*appsv1beta1.SidecarSet{web, db}), cfg.Webhooks[0].MatchConditions[1].Expression)
	pending, err = sidecarrules.ParsePending(cfg.Annotations)
	require.NoError(t, err)
	assert.Len(t, pending, 2, "an earlier pending SidecarSet is kept")

	paused := ss("off", matchLabels("app", "off"), func(s *appsv1beta1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })
	f.kube.ClearActions()
	require.NoError(t, in.Include(context.Background(), paused))
	assert.Empty(t, f.kube.Actions(), "a paused SidecarSet routes nothing")

	none := &Includer{Client: f.kube, SidecarSets: f.kruise.AppsV1beta1(), Configuration: "other"}
	assert.NoError(t, none.Include(context.Background(), db), "no configuration: nothing to widen")
}

// The leader keeps a pending SidecarSet's term until its cache shows the SidecarSet (then drops
// the entry), or sidecarrules.PendingGrace has passed: it never narrows the condition under a SidecarSet just
// admitted.
func TestSyncKeepsPendingSidecarSets(t *testing.T) {
	web := ss("web", matchLabels("app", "web"))
	web.Generation = 2
	f := newFixture(t, []runtime.Object{chartConfiguration()}, web)
	// Admitted sidecarrules.PendingHold ago: kept only while the leader's cache does not show them.
	in := &Includer{Client: f.kube, SidecarSets: f.kruise.AppsV1beta1(), Clock: clocktesting.NewFakePassiveClock(time.Now().Add(-sidecarrules.PendingHold))}
	db := ss("db", matchLabels("app", "db"))
	require.NoError(t, in.Include(context.Background(), db))
	widened := f.stored(t).Webhooks[0].MatchConditions[1].Expression
	require.Contains(t, widened, "'db'")
	waitConfig(t, f, func(a map[string]string) bool { return a[sidecarrules.PendingAnnotation] != "" })

	f.sync()
	cfg := f.stored(t)
	assert.Equal(t, widened, cfg.Webhooks[0].MatchConditions[1].Expression, "not narrowed before the cache shows db")
	assert.Contains(t, cfg.Annotations[sidecarrules.PendingAnnotation], `"db"`)

	// web updated to generation 3 and admitted: pending until the cache shows generation 3.
	web3 := web.DeepCopy()
	web3.Generation = 3
	require.NoError(t, in.Include(context.Background(), web3))
	waitConfig(t, f, func(a map[string]string) bool { p, _ := sidecarrules.ParsePending(a); return len(p) == 2 })
	f.sync()
	p, err := sidecarrules.ParsePending(f.stored(t).Annotations)
	require.NoError(t, err)
	assert.Contains(t, p, "web", "the cache shows web at generation 2 only")

	// db stored and cached, web at 3: nothing pending, the condition of the cache.
	_, err = f.kruise.AppsV1beta1().SidecarSets().Create(context.Background(), db, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = f.kruise.AppsV1beta1().SidecarSets().Update(context.Background(), web3, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		l, _ := f.ctrl.sidecarSets.List(labelsEverything())
		got, _ := f.ctrl.sidecarSets.Get("web")
		return len(l) == 2 && got.Generation == 3
	}, 5*time.Second, 10*time.Millisecond)
	f.sync()
	cfg = f.stored(t)
	assert.Empty(t, cfg.Annotations[sidecarrules.PendingAnnotation])
	assert.Equal(t, Expression([]*appsv1beta1.SidecarSet{web3, db}), cfg.Webhooks[0].MatchConditions[1].Expression)
}

func TestPendingExpires(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := sidecarrules.PendingSet{
		"old":   {Generation: 1, Term: "(a)", Since: metav1.NewTime(now.Add(-sidecarrules.PendingGrace))},
		"fresh": {Generation: 1, Term: "(b)", Since: metav1.NewTime(now.Add(-time.Second))},
		"shown": {Generation: 1, Term: "(c)", Since: metav1.NewTime(now)},
	}
	p["held"] = sidecarrules.Pending{Generation: 1, Term: "(d)", Since: metav1.NewTime(now.Add(-time.Second))}
	shown := ss("shown", matchLabels("app", "c"))
	shown.Generation = 1
	held := ss("held", matchLabels("app", "d"))
	held.Generation = 1
	p["shown"] = sidecarrules.Pending{Generation: 1, Term: "(c)", Since: metav1.NewTime(now.Add(-sidecarrules.PendingHold))}
	kept, next := p.Settle(map[string]*appsv1beta1.SidecarSet{"shown": shown, "held": held}, now)
	assert.ElementsMatch(t, []string{"(b)", "(d)"}, kept.Terms(), "held: shown, but admitted less than sidecarrules.PendingHold ago")
	assert.Equal(t, sidecarrules.PendingHold-time.Second, next, "synced again when the first entry kept expires")
}

// waitConfig waits until the controller's cache of the configuration has annotations ok says.
func waitConfig(t *testing.T, f *fixture, ok func(map[string]string) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		got, err := f.ctrl.configs.Get(DefaultConfiguration)
		return err == nil && ok(got.Annotations)
	}, 5*time.Second, 10*time.Millisecond)
}
