package nodesim

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	testRepo = "registry.example/app"
	testRun  = "r1"
)

func simNodeImage(name string, tags ...appsv1beta1.ImageTagSpec) *appsv1beta1.NodeImage {
	mods := []gen.NodeImageModifier{gen.SetNodeImageUID(types.UID("uid-" + name)), gen.SetNodeImageGeneration(1),
		gen.SetNodeImageLabels(map[string]string{Label: testRun})}
	if len(tags) > 0 {
		mods = append(mods, gen.AddNodeImageTags(testRepo, tags...))
	}
	return gen.NodeImage(name, mods...)
}

// harness drives a responder's respond step by step on a fake clock, with the informer's
// store filled by hand.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	clk    *clocktesting.FakeClock
	r      *Responder
}

func newHarness(t *testing.T, cfg ResponderConfig, objs ...*appsv1beta1.NodeImage) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewSimpleClientset(), clk: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	for _, o := range objs {
		_, err := h.client.AppsV1beta1().NodeImages().Create(context.Background(), o, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	h.client.ClearActions()
	cfg.Client, cfg.Clock = h.client, h.clk
	r, err := NewResponder(cfg)
	require.NoError(t, err)
	h.r = r
	for _, o := range objs {
		h.setSpec(o)
	}
	return h
}

// setSpec puts ni in the responder's cache, as an informer event would.
func (h *harness) setSpec(ni *appsv1beta1.NodeImage) {
	require.NoError(h.t, h.r.informer.GetIndexer().Update(ni.DeepCopy()))
}

// respond runs one step for name and returns when the responder wants to look again.
func (h *harness) respond(name string) time.Duration {
	h.t.Helper()
	after, err := h.r.respond(context.Background(), name)
	require.NoError(h.t, err)
	return after
}

// status is the NodeImage's status as the fake API server holds it.
func (h *harness) status(name string) appsv1beta1.NodeImageStatus {
	h.t.Helper()
	ni, err := h.client.AppsV1beta1().NodeImages().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(h.t, err)
	return ni.Status
}

// patches are the status patches sent so far, decoded.
func (h *harness) patches() []map[string]any {
	var out []map[string]any
	for _, a := range h.client.Actions() {
		p, ok := a.(clienttesting.PatchAction)
		if !ok {
			continue
		}
		assert.Equal(h.t, "status", p.GetSubresource(), "only the status subresource is written")
		var body map[string]any
		require.NoError(h.t, json.Unmarshal(p.GetPatch(), &body))
		out = append(out, body)
	}
	return out
}

func tagStatus(t *testing.T, st appsv1beta1.NodeImageStatus, tag string) *appsv1beta1.ImageTagStatus {
	t.Helper()
	for i, s := range st.ImageStatuses[testRepo].Tags {
		if s.Tag == tag {
			return &st.ImageStatuses[testRepo].Tags[i]
		}
	}
	return nil
}

func TestResponderSucceedsAfterPullTime(t *testing.T) {
	h := newHarness(t, ResponderConfig{PullTime: 3 * time.Second}, simNodeImage("n1", appsv1beta1.ImageTagSpec{Tag: "v1", Version: 1}))

	after := h.respond("n1")
	assert.Equal(t, 3*time.Second, after, "looks again when the pull ends")
	assert.Empty(t, h.patches(), "without ReportPulling nothing is written before the result")

	h.clk.Step(3 * time.Second)
	assert.Zero(t, h.respond("n1"), "nothing left to wait for")
	st := h.status("n1")
	got := tagStatus(t, st, "v1")
	require.NotNil(t, got)
	assert.Equal(t, appsv1beta1.ImagePhaseSucceeded, got.Phase)
	assert.Equal(t, int64(1), got.Version, "the status is for the spec's version")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, got.ImageID, "the controller and users read an image ID")
	require.NotNil(t, got.StartTime)
	require.NotNil(t, got.CompletionTime)
	assert.Equal(t, 3*time.Second, got.CompletionTime.Sub(got.StartTime.Time))
	assert.Equal(t, int32(1), st.Desired)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Zero(t, st.Pulling)
	require.NotNil(t, st.FirstSyncStatus)
	assert.Equal(t, appsv1beta1.SyncStatusSucceeded, st.FirstSyncStatus.Status)
	assert.Len(t, h.patches(), 1)
	assert.Equal(t, int64(1), h.r.Pulls())
	assert.Equal(t, int64(1), h.r.Writes())

	// The echo of our own write changes nothing: no second write.
	h.respond("n1")
	assert.Len(t, h.patches(), 1)
}

func TestResponderReportsPulling(t *testing.T) {
	h := newHarness(t, ResponderConfig{PullTime: time.Second, ReportPulling: true}, simNodeImage("n1", appsv1beta1.ImageTagSpec{Tag: "v1", Version: 1}))

	h.respond("n1")
	st := h.status("n1")
	got := tagStatus(t, st, "v1")
	require.NotNil(t, got, "the pull shows as soon as it starts")
	assert.Equal(t, appsv1beta1.ImagePhasePulling, got.Phase)
	assert.Nil(t, got.CompletionTime)
	assert.Equal(t, int32(1), st.Pulling)
	assert.Zero(t, h.r.Pulls())
	assert.Equal(t, 1, h.r.Pending())

	h.clk.Step(time.Second)
	h.respond("n1")
	got = tagStatus(t, h.status("n1"), "v1")
	require.NotNil(t, got)
	assert.Equal(t, appsv1beta1.ImagePhaseSucceeded, got.Phase)
	assert.Len(t, h.patches(), 2, "Pulling, then the result")
	assert.Zero(t, h.r.Pending())
}

func TestResponderFollowsTheSpec(t *testing.T) {
	h := newHarness(t, ResponderConfig{}, simNodeImage("n1",
		appsv1beta1.ImageTagSpec{Tag: "v1", Version: 1}, appsv1beta1.ImageTagSpec{Tag: "v2", Version: 4}))
	h.respond("n1")
	st := h.status("n1")
	require.NotNil(t, tagStatus(t, st, "v1"))
	require.NotNil(t, tagStatus(t, st, "v2"))
	assert.Equal(t, int64(4), tagStatus(t, st, "v2").Version)
	assert.Equal(t, int32(2), st.Succeeded)
	require.Len(t, h.patches(), 1, "both results go out in one write")

	// A new version of v1 is pulled again; v2 is left as it is.
	h.clk.Step(10 * time.Second)
	h.setSpec(simNodeImage("n1", appsv1beta1.ImageTagSpec{Tag: "v1", Version: 2}, appsv1beta1.ImageTagSpec{Tag: "v2", Version: 4}))
	h.respond("n1")
	st = h.status("n1")
	assert.Equal(t, int64(2), tagStatus(t, st, "v1").Version)
	assert.True(t, h.clk.Now().Truncate(time.Second).Equal(tagStatus(t, st, "v1").CompletionTime.Time), "v1 was pulled again")
	assert.False(t, h.clk.Now().Truncate(time.Second).Equal(tagStatus(t, st, "v2").CompletionTime.Time), "v2 was not pulled again")
	assert.Equal(t, int64(3), h.r.Pulls())

	// A tag that leaves the spec leaves the status; the image goes with its last tag.
	h.setSpec(simNodeImage("n1", appsv1beta1.ImageTagSpec{Tag: "v2", Version: 4}))
	h.respond("n1")
	st = h.status("n1")
	assert.Nil(t, tagStatus(t, st, "v1"))
	assert.NotNil(t, tagStatus(t, st, "v2"))
	assert.Equal(t, int32(1), st.Desired)

	firstSync := st.FirstSyncStatus
	h.setSpec(simNodeImage("n1"))
	h.respond("n1")
	st = h.status("n1")
	assert.Empty(t, st.ImageStatuses)
	assert.Zero(t, st.Desired)
	assert.Equal(t, firstSync, st.FirstSyncStatus, "firstSyncStatus is kept")
	patches := h.patches()
	last := patches[len(patches)-1]["status"].(map[string]any)
	assert.Equal(t, map[string]any{testRepo: nil}, last["imageStatuses"], "the image entry is removed with a null")
}

func TestResponderTakesOverFinishedResults(t *testing.T) {
	done := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ni := simNodeImage("n1", appsv1beta1.ImageTagSpec{Tag: "v1", Version: 3}, appsv1beta1.ImageTagSpec{Tag: "v2", Version: 2})
	ni.Status = appsv1beta1.NodeImageStatus{Desired: 2, Succeeded: 2, ImageStatuses: map[string]appsv1beta1.ImageStatus{testRepo: {Tags: []appsv1beta1.ImageTagStatus{
		{Tag: "v1", Phase: appsv1beta1.ImagePhaseSucceeded, Version: 3, StartTime: &done, CompletionTime: &done, ImageID: "sha256:old"},
		{Tag: "v2", Phase: appsv1beta1.ImagePhaseSucceeded, Version: 1, StartTime: &done, CompletionTime: &done, ImageID: "sha256:old"},
	}}}}
	h := newHarness(t, ResponderConfig{}, ni)

	h.respond("n1")
	st := h.status("n1")
	assert.Equal(t, "sha256:old", tagStatus(t, st, "v1").ImageID, "a finished result of the current version is kept")
	assert.Equal(t, int64(2), tagStatus(t, st, "v2").Version, "an older version's result is pulled again")
	assert.NotEqual(t, "sha256:old", tagStatus(t, st, "v2").ImageID)
	assert.Equal(t, int64(1), h.r.Pulls())
}

func TestResponderForgetsDeletedNodeImages(t *testing.T) {
	h := newHarness(t, ResponderConfig{PullTime: time.Minute}, simNodeImage("n1", appsv1beta1.ImageTagSpec{Tag: "v1", Version: 1}))
	h.respond("n1")
	assert.Equal(t, 1, h.r.Pending())
	require.NoError(t, h.r.informer.GetIndexer().Delete(simNodeImage("n1")))
	assert.Zero(t, h.respond("n1"))
	assert.Zero(t, h.r.Pending(), "a deleted NodeImage's pulls are dropped")
	assert.Empty(t, h.patches())
}

// TestResponderRun runs the informer and the workers against the fake clientset: a tag added to
// a simulated node's spec after start is answered.
func TestResponderRun(t *testing.T) {
	client := fake.NewSimpleClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := client.AppsV1beta1().NodeImages().Create(ctx, simNodeImage("n1"), metav1.CreateOptions{})
	require.NoError(t, err)
	r, err := NewResponder(ResponderConfig{Client: client, Run: testRun, Workers: 2})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.True(t, r.WaitForCacheSync(ctx))

	ni, err := client.AppsV1beta1().NodeImages().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	ni.Spec.Images = map[string]appsv1beta1.ImageSpec{testRepo: {Tags: []appsv1beta1.ImageTagSpec{{Tag: "v1", Version: 1}}}}
	ni.Generation = 2
	_, err = client.AppsV1beta1().NodeImages().Update(ctx, ni, metav1.UpdateOptions{})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		got, err := client.AppsV1beta1().NodeImages().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && got.Status.Succeeded == 1
	}, 10*time.Second, 10*time.Millisecond, "the simulated daemon answers the new tag")
	assert.Equal(t, int64(1), r.Pulls())
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
