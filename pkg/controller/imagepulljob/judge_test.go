package imagepulljob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// A job completes when nothing is left to pull or at its deadline (a
// deadline exceeded only when nodes are unfinished); a Never job never
// completes and looks again when a result is due.
func TestJudge(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(typ v1beta1.CompletionPolicyType, deadline *int64) *v1beta1.ImagePullJob {
		j := &v1beta1.ImagePullJob{}
		j.Spec.CompletionPolicy = v1beta1.CompletionPolicy{Type: typ, ActiveDeadlineSeconds: deadline}
		return j
	}
	busy := evaluation{active: 1, pending: 2, recheckAfter: 7 * time.Second}
	idle := evaluation{succeeded: 3, recheckAfter: 7 * time.Second}
	for _, tc := range []struct {
		name string
		job  *v1beta1.ImagePullJob
		e    evaluation
		now  time.Time
		want verdict
	}{
		{"pulling, no deadline", job(v1beta1.Always, nil), busy, start.Add(time.Hour), verdict{}},
		{"all done", job(v1beta1.Always, nil), idle, start, verdict{complete: true}},
		{"before the deadline", job(v1beta1.Always, ptr.To[int64](60)), busy, start.Add(20 * time.Second), verdict{after: 40 * time.Second}},
		{"all done before the deadline", job(v1beta1.Always, ptr.To[int64](60)), idle, start.Add(20 * time.Second),
			verdict{after: 40 * time.Second, complete: true}},
		{"deadline passed, nodes unfinished", job(v1beta1.Always, ptr.To[int64](60)), busy, start.Add(60 * time.Second),
			verdict{complete: true, deadline: true}},
		{"deadline passed, all done", job(v1beta1.Always, ptr.To[int64](60)), idle, start.Add(time.Hour), verdict{complete: true}},
		{"Never, all done", job(v1beta1.Never, nil), idle, start, verdict{after: 7 * time.Second}},
		{"Never ignores a deadline", job(v1beta1.Never, ptr.To[int64](60)), busy, start.Add(time.Hour), verdict{after: 7 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, judge(tc.job, tc.e, start, tc.now))
		})
	}
}
