package cronjobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestStateOf(t *testing.T) {
	job := func(c batchv1.JobConditionType, s corev1.ConditionStatus) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: c, Status: s}}}}
	}
	assert.Equal(t, Active, StateOf(&batchv1.Job{}))
	assert.Equal(t, Active, StateOf(job(batchv1.JobComplete, corev1.ConditionFalse)))
	assert.Equal(t, Active, StateOf(job(batchv1.JobSuspended, corev1.ConditionTrue)))
	assert.Equal(t, Succeeded, StateOf(job(batchv1.JobComplete, corev1.ConditionTrue)))
	assert.Equal(t, Failed, StateOf(job(batchv1.JobFailed, corev1.ConditionTrue)))

	bcj := func(c v1beta1.JobConditionType) *v1beta1.BroadcastJob {
		return &v1beta1.BroadcastJob{Status: v1beta1.BroadcastJobStatus{Conditions: []v1beta1.JobCondition{{Type: c, Status: corev1.ConditionTrue}}}}
	}
	assert.Equal(t, Active, StateOf(&v1beta1.BroadcastJob{}))
	assert.Equal(t, Succeeded, StateOf(bcj(v1beta1.JobComplete)))
	assert.Equal(t, Failed, StateOf(bcj(v1beta1.JobFailed)))

	now := metav1.Now()
	assert.Equal(t, Active, StateOf(&v1beta1.ImageListPullJob{}))
	assert.Equal(t, Succeeded, StateOf(&v1beta1.ImageListPullJob{Status: v1beta1.ImageListPullJobStatus{CompletionTime: &now, Desired: 2, Succeeded: 2}}))
	assert.Equal(t, Failed, StateOf(&v1beta1.ImageListPullJob{Status: v1beta1.ImageListPullJobStatus{CompletionTime: &now, Desired: 2, Succeeded: 1}}))
}

func TestOverLimit(t *testing.T) {
	started := func(name string, minutes int) Object {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if minutes >= 0 {
			j.Status.StartTime = &metav1.Time{Time: t0.Add(time.Duration(minutes) * time.Minute)}
		}
		return j
	}
	names := func(objs []Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out
	}
	finished := []Object{started("c", 3), started("a", 1), started("never", -1), started("b", 2)}
	assert.Nil(t, OverLimit(finished, nil), "no limit keeps all")
	assert.Nil(t, OverLimit(finished, ptr.To[int32](4)))
	assert.Equal(t, []string{"never", "a"}, names(OverLimit(finished, ptr.To[int32](2))), "oldest first, never started oldest")
	assert.Equal(t, []string{"never", "a", "b", "c"}, names(OverLimit(finished, ptr.To[int32](0))))
	assert.Len(t, OverLimit(finished, ptr.To[int32](-1)), 4)
	assert.Equal(t, "c", finished[0].GetName(), "the input is not reordered")
}
