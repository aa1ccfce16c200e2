package imagepull

import (
	"math"
	"testing"
	"time"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/contract/imageref"
)

// FuzzNewRequest reads a NodeImage tag's pull policy (timeoutSeconds,
// backoffLimit, activeDeadlineSeconds: any values, the int64 deadline
// included). Invariants: no panic; the attempt timeout is positive (the
// default unless a positive timeout is given); the retries are never
// negative (the default unless a non-negative limit is given); the
// deadline is never negative, zero (none) unless a positive one is given,
// and then that many seconds, or the most whole seconds a time.Duration
// holds when that does not fit, never a shorter one; the image is the joined reference; and the
// pull is forced unless the policy is IfNotPresent.
func FuzzNewRequest(f *testing.F) {
	f.Add("registry.io/app", "v1", true, int32(60), int32(2), int64(3600), "Always")
	f.Add("registry.io/app", "sha256:0123", false, int32(0), int32(0), int64(0), "IfNotPresent")
	f.Add("app", "latest", true, int32(-1), int32(-1), int64(-1), "")
	f.Add("app", "latest", true, int32(math.MaxInt32), int32(math.MaxInt32), int64(math.MaxInt64), "Always")
	f.Add("app", "latest", true, int32(1), int32(0), int64(9223372037), "Always")
	f.Add("app", "latest", true, int32(1), int32(0), int64(18446744074), "Always")
	f.Fuzz(func(t *testing.T, repo, tag string, withPolicy bool, timeout, backoff int32, deadline int64, pullPolicy string) {
		spec := appsv1beta1.ImageTagSpec{Tag: tag, ImagePullPolicy: appsv1beta1.ImagePullPolicy(pullPolicy)}
		if withPolicy {
			spec.PullPolicy = &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: &timeout, BackoffLimit: &backoff, ActiveDeadlineSeconds: &deadline}
		}
		r := newRequest(tagKey{repo: repo, tag: tag}, spec)

		if r.image != imageref.Join(repo, tag) {
			t.Fatalf("image %q, want %q", r.image, imageref.Join(repo, tag))
		}
		if r.always != (spec.ImagePullPolicy != appsv1beta1.PullIfNotPresent) {
			t.Fatalf("policy %q: always %t", pullPolicy, r.always)
		}
		wantTimeout := DefaultTimeoutSeconds * time.Second
		wantRetries := DefaultBackoffLimit
		if withPolicy && timeout > 0 {
			wantTimeout = time.Duration(timeout) * time.Second
		}
		if withPolicy && backoff >= 0 {
			wantRetries = int(backoff)
		}
		if r.timeout != wantTimeout || r.retries != wantRetries {
			t.Fatalf("timeout %v retries %d; want %v and %d", r.timeout, r.retries, wantTimeout, wantRetries)
		}
		switch {
		case !withPolicy || deadline <= 0:
			if r.deadline != 0 {
				t.Fatalf("deadline %d: %v, want none", deadline, r.deadline)
			}
		case deadline > math.MaxInt64/int64(time.Second):
			if most := time.Duration(math.MaxInt64/int64(time.Second)) * time.Second; r.deadline < most {
				t.Fatalf("deadline of %ds: %v, want at least %v", deadline, r.deadline, most)
			}
		default:
			if r.deadline != time.Duration(deadline)*time.Second {
				t.Fatalf("deadline of %ds: %v", deadline, r.deadline)
			}
		}
	})
}
