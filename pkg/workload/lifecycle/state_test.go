package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var (
	now   = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	clk   = clocktesting.NewFakePassiveClock(now)
	stamp = "2025-03-04T05:06:07Z"
)

func TestStateOf(t *testing.T) {
	tests := []struct {
		name      string
		pod       *corev1.Pod
		want      pub.LifecycleStateType
		wantKnown bool
	}{
		{name: "nil pod", pod: nil, want: ""},
		{name: "no labels", pod: gen.Pod("web"), want: ""},
		{name: "other labels only", pod: gen.Pod("web", gen.AddPodLabels(map[string]string{"app": "web"})), want: ""},
		{name: "Normal", pod: gen.Pod("web", gen.SetPodLifecycleState(pub.LifecycleStateNormal)), want: "Normal", wantKnown: true},
		{name: "PreparingDelete", pod: gen.Pod("web", gen.SetPodLifecycleState(pub.LifecycleStatePreparingDelete)), want: "PreparingDelete", wantKnown: true},
		{name: "written by hand", pod: gen.Pod("web", gen.SetPodLifecycleState("normal")), want: "normal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := StateOf(tc.pod)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantKnown, Known(got))
		})
	}
}

func TestKnownStates(t *testing.T) {
	for _, s := range []pub.LifecycleStateType{"PreparingNormal", "Normal", "PreparingUpdate", "Updating", "Updated", "PreparingDelete"} {
		assert.True(t, Known(s), s)
	}
	assert.False(t, Known(""))
}

func TestSince(t *testing.T) {
	tests := []struct {
		name   string
		pod    *corev1.Pod
		want   time.Time
		wantOK bool
	}{
		{name: "nil pod", pod: nil},
		{name: "no annotation", pod: gen.Pod("web")},
		{name: "RFC 3339", pod: gen.Pod("web", gen.AddPodAnnotations(map[string]string{pub.LifecycleTimestampKey: "2025-03-04T13:06:07+08:00"})), want: now, wantOK: true},
		{name: "garbage", pod: gen.Pod("web", gen.AddPodAnnotations(map[string]string{pub.LifecycleTimestampKey: "yesterday"}))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Since(tc.pod)
			assert.Equal(t, tc.wantOK, ok)
			assert.True(t, tc.want.Equal(got), "got %v", got)
		})
	}
}

func TestSetState(t *testing.T) {
	tests := []struct {
		name            string
		pod             *corev1.Pod
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		{
			name:            "bare pod",
			pod:             gen.Pod("web"),
			wantLabels:      map[string]string{pub.LifecycleStateKey: "PreparingDelete"},
			wantAnnotations: map[string]string{pub.LifecycleTimestampKey: stamp},
		},
		{
			name: "keeps other metadata, replaces the old state and time",
			pod: gen.Pod("web", gen.AddPodLabels(map[string]string{"app": "web"}), gen.SetPodLifecycleState(pub.LifecycleStateNormal),
				gen.AddPodAnnotations(map[string]string{"note": "x", pub.LifecycleTimestampKey: "2020-01-01T00:00:00Z"})),
			wantLabels:      map[string]string{"app": "web", pub.LifecycleStateKey: "PreparingDelete"},
			wantAnnotations: map[string]string{"note": "x", pub.LifecycleTimestampKey: stamp},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			StateSetter(pub.LifecycleStatePreparingDelete, clk)(p)
			assert.Equal(t, tc.wantLabels, p.Labels)
			assert.Equal(t, tc.wantAnnotations, p.Annotations)
			since, ok := Since(p)
			assert.True(t, ok)
			assert.True(t, now.Equal(since))
		})
	}
}

func TestStatePatch(t *testing.T) {
	got, err := StatePatch(pub.LifecycleStateNormal, clk)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"labels":{"lifecycle.apps.kruise.io/state":"Normal"},"annotations":{"lifecycle.apps.kruise.io/timestamp":"`+stamp+`"}}}`, string(got))
}

func TestStateTimestampIsUTC(t *testing.T) {
	east := clocktesting.NewFakePassiveClock(now.In(time.FixedZone("UTC+8", 8*3600)))
	p := gen.Pod("web")
	SetState(p, pub.LifecycleStateNormal, east)
	assert.Equal(t, stamp, p.Annotations[pub.LifecycleTimestampKey])
}
