package imagepulljob

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// The schema admits the values OpenKruise admits, out-of-range ones
// included (a timeout of 0, a negative backoff limit, deadline or ttl). The
// NodeImage every job on a node shares gets them as kruise reads them, the
// way the daemon reads a tag's: never a value that means something else
// there, and no overflow of deadline + ttl.
func TestBuildRequestReadsOutOfRangeValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		pull *v1beta1.PullPolicy
		cp   v1beta1.CompletionPolicy
		want v1beta1.ImageTagPullPolicy
	}{
		{"defaults", nil, v1beta1.CompletionPolicy{},
			v1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)}},
		{"in range", &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](30), BackoffLimit: ptr.To[int32](0)},
			v1beta1.CompletionPolicy{ActiveDeadlineSeconds: ptr.To[int64](40), TTLSecondsAfterFinished: ptr.To[int32](5)},
			v1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](30), BackoffLimit: ptr.To[int32](0),
				ActiveDeadlineSeconds: ptr.To[int64](40), TTLSecondsAfterFinished: ptr.To[int32](45)}},
		{"zero timeout is the default", &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](0), BackoffLimit: ptr.To[int32](-1)},
			v1beta1.CompletionPolicy{},
			v1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)}},
		{"negative timeout is the default", &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](math.MinInt32), BackoffLimit: ptr.To[int32](math.MinInt32)},
			v1beta1.CompletionPolicy{},
			v1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)}},
		{"a deadline below 1 has passed, a negative ttl is 0", nil,
			v1beta1.CompletionPolicy{ActiveDeadlineSeconds: ptr.To[int64](-7), TTLSecondsAfterFinished: ptr.To[int32](-9)},
			v1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3),
				ActiveDeadlineSeconds: ptr.To[int64](1), TTLSecondsAfterFinished: ptr.To[int32](1)}},
		{"the largest deadline and ttl do not overflow", nil,
			v1beta1.CompletionPolicy{ActiveDeadlineSeconds: ptr.To[int64](math.MaxInt64 - 5), TTLSecondsAfterFinished: ptr.To[int32](10)},
			v1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3),
				ActiveDeadlineSeconds: ptr.To[int64](math.MaxInt64 - 5), TTLSecondsAfterFinished: ptr.To[int32](math.MaxInt32)}},
		{"never has no deadline", nil, v1beta1.CompletionPolicy{Type: v1beta1.Never},
			v1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &v1beta1.ImagePullJob{Spec: v1beta1.ImagePullJobSpec{Image: "app:v1",
				ImagePullJobTemplate: v1beta1.ImagePullJobTemplate{PullPolicy: tc.pull, CompletionPolicy: tc.cp}}}
			assert.Equal(t, tc.want, buildRequest(job, nil).pullPolicy)
		})
	}
}

// A deadline below 1 has passed when the job starts (as in OpenKruise):
// the job finishes at once, every node failed with DeadlineExceeded, and
// no NodeImage is asked to pull.
func TestDeadlineBelowOnePassedAtStart(t *testing.T) {
	for _, ads := range []int64{0, -30, math.MinInt64} {
		job := newJob("j", image, gen.SetImagePullJobActiveDeadlineSeconds(ads))
		f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
		f.syncJob(t, "j")
		f.syncNodes(t)
		st := f.job(t, "j").Status
		require.NotNil(t, st.CompletionTime, "deadline %d", ads)
		assert.Equal(t, int32(1), st.Failed)
		require.Len(t, st.Failures, 1)
		assert.Equal(t, "DeadlineExceeded", st.Failures[0].Reason)
		assert.Empty(t, f.ni(t, "n1").Spec.Images)
	}
}

// A ttl below 0 deletes the finished job at once, as 0 does.
func TestNegativeTTLDeletesAtOnce(t *testing.T) {
	job := newJob("j", image, gen.SetImagePullJobTTLSecondsAfterFinished(-60), gen.SetImagePullJobStartTime(now.Add(-time.Minute)), gen.SetImagePullJobCompletionTime(now))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}})
	assert.Equal(t, time.Duration(0), f.syncJob(t, "j"))
	_, err := f.kruise.AppsV1beta1().ImagePullJobs(testNS).Get(context.Background(), "j", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "deleted: %v", err)
}

// imagePullPolicy: the schema admits any string, as OpenKruise's does. As in
// OpenKruise, only IfNotPresent (the default) skips a present image; any
// other value pulls as Always does, and the NodeImage gets Always.
func TestImagePullPolicyOtherThanIfNotPresentPullsAlways(t *testing.T) {
	for policy, want := range map[v1beta1.ImagePullPolicy]v1beta1.ImagePullPolicy{
		"":                       v1beta1.PullIfNotPresent,
		v1beta1.PullIfNotPresent: v1beta1.PullIfNotPresent,
		v1beta1.PullAlways:       v1beta1.PullAlways,
		"Never":                  v1beta1.PullAlways,
		"ifnotpresent":           v1beta1.PullAlways,
	} {
		job := &v1beta1.ImagePullJob{Spec: v1beta1.ImagePullJobSpec{Image: "app:v1",
			ImagePullJobTemplate: v1beta1.ImagePullJobTemplate{ImagePullPolicy: policy}}}
		assert.Equal(t, want, buildRequest(job, nil).imagePullPolicy, "imagePullPolicy %q", policy)
		assert.Equal(t, want == v1beta1.PullAlways, pullsAlways(job), "imagePullPolicy %q", policy)
	}
}

// A job whose imagePullPolicy is neither Always nor IfNotPresent does not
// take another job's earlier result for its own: it pulls again, and asks
// the node for Always.
func TestUnknownImagePullPolicyPullsAgain(t *testing.T) {
	a := newJob("a", image, gen.SetImagePullJobNodeNames("n1"))
	b := newJob("b", image, gen.SetImagePullJobNodeNames("n1"))
	b.Spec.ImagePullPolicy = "Never"
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{a, b}, nodeImages: []*v1beta1.NodeImage{nodeImage("n1")}})
	f.step(t, "a")
	f.report(t, "n1", repo, "v1", v1beta1.ImagePhaseSucceeded)
	f.clock.Step(20 * time.Second)
	f.step(t, "b")
	tag := f.tagOn(t, "n1", repo, "v1")
	assert.True(t, hasOwner(tag, b.UID))
	assert.Equal(t, int64(2), tag.Version, "pulled again for b")
	assert.Equal(t, v1beta1.PullAlways, tag.ImagePullPolicy)
	assert.Nil(t, f.job(t, "b").Status.CompletionTime)
}
