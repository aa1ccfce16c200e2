package ejobaccess

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestRequesterRoundTrip(t *testing.T) {
	r := FromUserInfo(authenticationv1.UserInfo{Username: "alice", UID: "u1", Groups: []string{"dev"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a"}}})
	got, err := FromAnnotations(map[string]string{RequesterAnnotation: r.Encode()})
	require.NoError(t, err)
	assert.Equal(t, r, got)

	_, err = FromAnnotations(nil)
	assert.ErrorIs(t, err, ErrNoRequester)
	_, err = FromAnnotations(map[string]string{RequesterAnnotation: "{"})
	assert.Error(t, err)
	_, err = FromAnnotations(map[string]string{RequesterAnnotation: `{"groups":["system:masters"]}`})
	assert.Error(t, err, "no username")
}

func TestReview(t *testing.T) {
	r := Requester{Username: "alice", UID: "u1", Groups: []string{"dev"}, Extra: map[string][]string{"k": {"v"}}}
	sar := r.Review(Checks[0], "ns", "pod-a")
	assert.Equal(t, "alice", sar.Spec.User)
	assert.Equal(t, "u1", sar.Spec.UID)
	assert.Equal(t, []string{"dev"}, sar.Spec.Groups)
	assert.Equal(t, authorizationv1.ExtraValue{"v"}, sar.Spec.Extra["k"])
	assert.Equal(t, authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "create", Resource: "pods", Subresource: "exec", Name: "pod-a"},
		*sar.Spec.ResourceAttributes)
}

// Ask refuses at the first permission refused, naming it.
func TestAsk(t *testing.T) {
	client := fake.NewClientset()
	var asked []string
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		asked = append(asked, ra.Subresource)
		sar.Status.Allowed = ra.Subresource == "exec"
		if !sar.Status.Allowed {
			sar.Status.Reason = "no rule"
		}
		return true, sar, nil
	})
	d, err := Ask(context.Background(), client.AuthorizationV1().SubjectAccessReviews(), Requester{Username: "bob"}, "ns", "p")
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, "patch pods/ephemeralcontainers (no rule)", d.Denied)
	assert.Equal(t, []string{"exec", "ephemeralcontainers"}, asked)
}

// AskFor asks only the checks it is given.
func TestAskFor(t *testing.T) {
	client := fake.NewClientset()
	var asked []string
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		asked = append(asked, sar.Spec.ResourceAttributes.Subresource)
		sar.Status.Allowed = true
		return true, sar, nil
	})
	d, err := AskFor(context.Background(), client.AuthorizationV1().SubjectAccessReviews(), Requester{Username: "bob"}, Checks[:1], "ns", "p")
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, []string{"exec"}, asked)
}
