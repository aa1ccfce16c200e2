package imagepulljob

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestFailureReason(t *testing.T) {
	for msg, want := range map[string]string{
		"failed to pull app:v1 after 4 attempts: NotFound: manifest unknown":                                                          "NotFound",
		"failed to pull app:v1 after 1 attempt: Unauthorized: 401; credential problems: PullSecretNotFound: pull secret not found: x": "Unauthorized",
		"failed to pull app:v1 after 2 attempts: Timeout: context deadline exceeded":                                                  "Timeout",
		"InvalidPullSecret: secret kruise-daemon-config/x is of type Opaque":                                                          "InvalidPullSecret",
		"activeDeadlineSeconds (900) exceeded; last error: Unauthorized: 401":                                                         "DeadlineExceeded",
		"activeDeadlineSeconds (900) passed before the pull started":                                                                  "DeadlineExceeded",
		"something the runtime said": "PullFailed",
		"":                           "PullFailed",
		"failed: XNotFound: not a reason word; (Cancelled: yes)": "Cancelled",
	} {
		assert.Equal(t, want, failureReason(msg), msg)
	}
	// Every reason of the CRI classification is known here.
	for _, r := range []string{cri.PullReasonNotFound, cri.PullReasonUnauthorized, cri.PullReasonTimeout,
		cri.PullReasonCancelled, cri.PullReasonUnavailable, cri.PullReasonFailed} {
		assert.Contains(t, daemonReasons, r)
	}
}

func TestBoundFailures(t *testing.T) {
	var failed []string
	records := map[string]v1beta1.NodeFailure{}
	for i := range 20 {
		n := fmt.Sprintf("n%02d", 19-i)
		failed = append(failed, n)
		records[n] = nodeFailure(n, "NotFound", strings.Repeat("é", 600))
	}
	got, omitted := boundFailures(failed, records)
	require.Len(t, got, v1beta1.MaxFailures)
	assert.Equal(t, int32(4), omitted)
	assert.Equal(t, "n00", got[0].Node, "by node name")
	assert.Equal(t, "n15", got[15].Node)
	assert.Equal(t, v1beta1.MaxFailureMessage, utf8.RuneCountInString(got[0].Message))
	assert.True(t, strings.HasSuffix(got[0].Message, "..."))

	note := failureNote(got, omitted)
	assert.True(t, strings.HasPrefix(note, " (n00: NotFound: éé"), note)
	assert.True(t, strings.HasSuffix(note, "...; 19 more nodes failed)"), note)
	assert.LessOrEqual(t, utf8.RuneCountInString(note), maxNoteMessage+60)

	got, omitted = boundFailures([]string{"b", "a"}, map[string]v1beta1.NodeFailure{"b": {Node: "b", Reason: "Timeout"}})
	assert.Equal(t, []v1beta1.NodeFailure{{Node: "a"}, {Node: "b", Reason: "Timeout"}}, got)
	assert.Zero(t, omitted)
	assert.Equal(t, " (a; 1 more node failed)", failureNote(got, omitted))
	assert.Empty(t, failureNote(nil, 0))
}

// A job that failed on many nodes says why on at most 16 of them, and how
// many more failed.
func TestManyFailuresAreBounded(t *testing.T) {
	var nis []*v1beta1.NodeImage
	for i := range 20 {
		nis = append(nis, nodeImage(fmt.Sprintf("n%02d", i)))
	}
	job := newJob("j", image, gen.SetImagePullJobParallelism(intstr.FromInt32(20)))
	f := newFixture(t, objects{jobs: []*v1beta1.ImagePullJob{job}, nodeImages: nis})
	f.step(t, "j")
	for _, ni := range nis {
		f.reportMessage(t, ni.Name, repo, "v1", v1beta1.ImagePhaseFailed, "failed to pull "+image+" after 4 attempts: Unauthorized: 401 on "+ni.Name)
	}
	f.step(t, "j")
	st := f.job(t, "j").Status
	require.NotNil(t, st.CompletionTime)
	assert.Len(t, st.FailedNodes, 20, "failedNodes lists them all, as OpenKruise's does")
	require.Len(t, st.Failures, v1beta1.MaxFailures)
	assert.Equal(t, int32(4), st.OmittedFailures)
	assert.Equal(t, v1beta1.NodeFailure{Node: "n00", Reason: "Unauthorized", Message: "failed to pull " + image + " after 4 attempts: Unauthorized: 401 on n00"}, st.Failures[0])
	assert.Equal(t, "Completed: 0/20 nodes succeeded, 20 failed, 0 pulling (n00: failed to pull "+image+" after 4 attempts: Unauthorized: 401 on n00; 19 more nodes failed)", st.Message)
}
