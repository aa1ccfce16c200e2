package imagelistpulljob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// A list job may have a deadline shorter than its pull timeout (OpenKruise
// admits that on an ImageListPullJob); an ImagePullJob may not. The list
// job's ImagePullJobs pull with the timeout lowered to the deadline, so the
// API server accepts them, and the creation Event says so.
func TestChildTimeoutFitsTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pullPolicy  *v1beta1.PullPolicy
		deadline    *int64
		never       bool
		wantTimeout *int32 // the child's pullPolicy.timeoutSeconds; nil: no pullPolicy
		wantNote    string
	}{
		{"deadline below timeout", &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](2)}, ptr.To[int64](30),
			false, ptr.To[int32](30), " (pullPolicy.timeoutSeconds 600 lowered to completionPolicy.activeDeadlineSeconds 30)"},
		{"deadline below the default timeout", nil, ptr.To[int64](45),
			false, ptr.To[int32](45), " (pullPolicy.timeoutSeconds 600 lowered to completionPolicy.activeDeadlineSeconds 45)"},
		{"deadline equal to timeout", &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](50)}, ptr.To[int64](50), false, ptr.To[int32](50), ""},
		{"deadline above timeout", &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](50)}, ptr.To[int64](51), false, ptr.To[int32](50), ""},
		{"no deadline", &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600)}, nil, false, ptr.To[int32](600), ""},
		{"no deadline, no pull policy", nil, nil, false, nil, ""},
		// Never with a deadline is refused by the API server; were it
		// there, it would not be a deadline.
		{"never", &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600)}, ptr.To[int64](30), true, ptr.To[int32](600), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newList("nginx:1")
			l.Spec.PullPolicy = tc.pullPolicy
			l.Spec.CompletionPolicy.ActiveDeadlineSeconds = tc.deadline
			if tc.never {
				l.Spec.CompletionPolicy = v1beta1.CompletionPolicy{Type: v1beta1.Never, ActiveDeadlineSeconds: tc.deadline}
			}
			f := newFixture(t, l)
			f.sync(t)

			kid := f.children(t)["nginx:1"]
			if tc.wantTimeout == nil {
				assert.Nil(t, kid.Spec.PullPolicy)
			} else {
				require.NotNil(t, kid.Spec.PullPolicy)
				assert.Equal(t, *tc.wantTimeout, *kid.Spec.PullPolicy.TimeoutSeconds)
			}
			assert.Equal(t, tc.deadline, kid.Spec.CompletionPolicy.ActiveDeadlineSeconds, "the deadline is the list job's")
			if tc.pullPolicy != nil {
				assert.Equal(t, tc.pullPolicy.BackoffLimit, kid.Spec.PullPolicy.BackoffLimit, "the rest of the pull policy is kept")
			}
			assert.Equal(t, l.Spec.PullPolicy, f.list(t).Spec.PullPolicy, "the list job itself is not changed")
			assert.Equal(t, []string{"Normal " + ReasonCreated + " Created ImagePullJob " + ChildName("list", "nginx:1") + " for nginx:1" + tc.wantNote},
				gen.DrainEvents(f.recorder))
		})
	}
}
