package lifecycle

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

func TestWriterSetStateWritesReadinessFirst(t *testing.T) {
	pod := podIn(pub.LifecycleStateNormal, labels("pd", "true"))
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, gated(pub.LifecycleStateNormal, "", "", "").Spec.ReadinessGates...)
	client := fake.NewClientset(pod)
	var wrote []string
	w := Writer{Client: client, Clock: clk, Lifecycle: &pub.Lifecycle{PreDelete: markingPreDelete},
		Wrote: func(o metav1.Object) { wrote = append(wrote, o.GetName()) }}

	dec := Decide(Input{Pod: pod, Lifecycle: w.Lifecycle, Want: WantDelete})
	require.Equal(t, ActionSetState, dec.Action)
	got, err := w.SetState(context.Background(), pod, dec)
	require.NoError(t, err)
	assert.Equal(t, StateWritten, got)

	var subresources []string
	for _, a := range client.Actions() {
		subresources = append(subresources, a.GetSubresource())
	}
	assert.Equal(t, []string{"status", ""}, subresources, "the KruisePodReady condition goes before the state label")
	assert.Equal(t, []string{"web-0", "web-0"}, wrote)
	out, err := client.CoreV1().Pods("default").Get(context.Background(), "web-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, pub.LifecycleStatePreparingDelete, StateOf(out))
}

func TestWriterSetStateOnAGonePod(t *testing.T) {
	pod := podIn(pub.LifecycleStateNormal, labels("pd", "true"))
	w := Writer{Client: fake.NewClientset(), Clock: clk, Lifecycle: &pub.Lifecycle{PreDelete: preDeleteHook}}
	got, err := w.SetState(context.Background(), pod, Decide(Input{Pod: pod, Lifecycle: w.Lifecycle, Want: WantDelete}))
	require.NoError(t, err)
	assert.Equal(t, PodGone, got)
}

func TestWriterAfterRefresh(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome inplace.Outcome
		want    pub.LifecycleStateType
		acted   bool
	}{
		{name: "an update found finished ends", outcome: inplace.OutcomeNothing, want: pub.LifecycleStateNormal, acted: true},
		{name: "an update just marked ready ends", outcome: inplace.OutcomeMarkedReady, want: pub.LifecycleStateNormal, acted: true},
		{name: "an update still waited for stays", outcome: inplace.OutcomeWaiting, want: pub.LifecycleStateUpdating},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podIn(pub.LifecycleStateUpdating)
			client := fake.NewClientset(pod)
			w := Writer{Client: client, Clock: clk}
			acted, err := w.AfterRefresh(context.Background(), pod, tc.outcome, "")
			require.NoError(t, err)
			assert.Equal(t, tc.acted, acted)
			out, err := client.CoreV1().Pods("default").Get(context.Background(), "web-0", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, StateOf(out))
		})
	}
}
