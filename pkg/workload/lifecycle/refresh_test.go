package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// scripted refreshes each pod as its script says.
type scripted map[string]inplace.Result

func (s scripted) Refresh(_ context.Context, pod *corev1.Pod) inplace.Result { return s[pod.Name] }

func TestRefreshPass(t *testing.T) {
	named := func(name string, mods ...gen.PodModifier) *corev1.Pod {
		return gen.Pod(name, append([]gen.PodModifier{gen.SetPodNamespace("default"), gen.SetPodLifecycleState(pub.LifecycleStateNormal)}, mods...)...)
	}
	started := now.Add(-3 * time.Second)
	readied := named("readied")
	require.NoError(t, inplace.WriteState(readied, &pub.InPlaceUpdateState{UpdateTimestamp: metav1.NewTime(started)}))
	pods := []*corev1.Pod{named("waiting"), named("conflicted"), named("failed"), named("unreadable"), readied, named("moved")}
	script := scripted{
		"waiting":    {Outcome: inplace.OutcomeWaiting, RequeueAfter: 5 * time.Second},
		"conflicted": {Err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "conflicted", nil)},
		"failed":     {Err: assert.AnError},
		"unreadable": {Outcome: inplace.OutcomeUnreadable, Err: &inplace.AnnotationError{Pod: "default/unreadable", Key: pub.InPlaceUpdateStateKey, Problem: "is not JSON"}},
		"readied":    {Outcome: inplace.OutcomeMarkedReady, Pod: readied},
		"moved":      {Outcome: inplace.OutcomeNextBatch, Pod: named("moved")},
	}
	rec := record.NewFakeRecorder(10)
	var refreshed []string
	var took []time.Duration
	acted, after, err := RefreshPass{
		Updater: script, States: Writer{Client: fake.NewClientset(), Clock: clk},
		Recorder: rec, Owner: named("owner"),
		Refreshed: func(o metav1.Object) { refreshed = append(refreshed, o.GetName()) },
		Ready:     func(d time.Duration) { took = append(took, d) },
	}.Run(context.Background(), pods)

	assert.True(t, acted)
	assert.Equal(t, 5*time.Second, after)
	require.Error(t, err)
	assert.Equal(t, "pod failed: "+assert.AnError.Error(), err.Error(), "a conflict and an unreadable pod are no error of the pass")
	assert.Equal(t, []string{"readied", "moved"}, refreshed)
	assert.Equal(t, []time.Duration{3 * time.Second}, took)
	assert.Len(t, rec.Events, 1, "the unreadable pod is reported")
}
