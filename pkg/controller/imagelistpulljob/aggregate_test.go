package imagelistpulljob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func childWith(name string, st v1beta1.ImagePullJobStatus) *v1beta1.ImagePullJob {
	j := &v1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name}}
	j.Status = st
	return j
}

// An image counts as succeeded only when its child completed on every node;
// a failing child is listed with its message; a wanted image without a child
// yet counts as active, so the list job does not complete before it.
func TestAggregate(t *testing.T) {
	done := ptr.To(metav1.NewTime(now))
	children := map[string]*v1beta1.ImagePullJob{
		"b:1": childWith("b", v1beta1.ImagePullJobStatus{Desired: 2, Succeeded: 1, Failed: 1, Message: "1 failed", CompletionTime: done}),
		"a:1": childWith("a", v1beta1.ImagePullJobStatus{Desired: 2, Succeeded: 2, CompletionTime: done}),
		"c:1": childWith("c", v1beta1.ImagePullJobStatus{Desired: 2, Succeeded: 1, Active: 1}),
	}
	list := newList("a:1", "b:1", "c:1", "d:1")

	st, complete := aggregate(list, children, 4, now)
	assert.False(t, complete)
	assert.Nil(t, st.CompletionTime)
	assert.Equal(t, now, st.StartTime.Time)
	assert.Equal(t, int32(4), st.Desired)
	assert.Equal(t, int32(2), st.Completed)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, int32(2), st.Active, "the running child and the one not created yet")
	assert.Equal(t, []*v1beta1.FailedImageStatus{{ImagePullJob: "b", Name: "b:1", Message: "1 failed"}}, st.FailedImageStatuses)
	assert.Nil(t, list.Status.StartTime, "the list job's own status is left alone")

	children["c:1"].Status = v1beta1.ImagePullJobStatus{Desired: 2, Succeeded: 2, CompletionTime: done}
	children["d:1"] = childWith("d", v1beta1.ImagePullJobStatus{Desired: 2, Succeeded: 2, CompletionTime: done})
	st, complete = aggregate(list, children, 4, now)
	assert.True(t, complete)
	assert.Equal(t, now, st.CompletionTime.Time)
	assert.Equal(t, int32(3), st.Succeeded)
	assert.Equal(t, int32(0), st.Active)

	list.Spec.CompletionPolicy.Type = v1beta1.Never
	st, complete = aggregate(list, children, 4, now)
	assert.False(t, complete, "a Never list job never completes")
	assert.Nil(t, st.CompletionTime)
}
