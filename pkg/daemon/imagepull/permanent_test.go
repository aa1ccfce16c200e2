package imagepull

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func unauthorized(tag string) error {
	return fmt.Errorf("CRI PullImage %s: %w", img(tag), status.Error(codes.Unknown,
		fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: unexpected status from HEAD request to https://registry.example.com/v2/app/manifests/%s: 401 Unauthorized", img(tag), img(tag), tag)))
}

// A failure a retry cannot change fails the tag at once, whatever its
// backoffLimit; one a retry may change keeps its retries and backoff.
// Unauthorized is final only when no credentials could change: no pull
// secret is named (a named one may appear or be fixed) and no credential
// provider matches the image (it may answer differently next time).
func TestPermanentFailuresAreNotRetried(t *testing.T) {
	const backoffLimit = 2
	cases := []struct {
		name string
		err  func(tag string) error
		// secrets are named in the spec; present are those that exist.
		secrets, present []string
		// provider: a credential provider matches the image; its
		// credential is then tried.
		provider  bool
		permanent bool
		why       string
	}{
		{name: "NotFound, anonymous", err: notFound, permanent: true, why: "the registry does not have the image"},
		{name: "NotFound with a secret", err: notFound, secrets: []string{"regcred"}, present: []string{"regcred"},
			permanent: true, why: "the registry does not have the image"},
		{name: "NotFound with a provider", err: notFound, provider: true, permanent: true, why: "the registry does not have the image"},
		{name: "Unauthorized, no credentials could change", err: unauthorized, permanent: true,
			why: "the registry wants credentials and no pull secret or credential provider applies to the image"},
		{name: "Unauthorized, provider matched", err: unauthorized, provider: true},
		{name: "Unauthorized, named secret missing", err: unauthorized, secrets: []string{"gone"}},
		{name: "Unauthorized, named secret present", err: unauthorized, secrets: []string{"regcred"}, present: []string{"regcred"}},
		{name: "transient failure, anonymous", err: blobError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var secrets []appsv1beta1.ReferenceObject
			for _, s := range tc.secrets {
				secrets = append(secrets, appsv1beta1.ReferenceObject{Namespace: daemonNS, Name: s})
			}
			f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, backoffLimit, 0))),
				gen.SetNodeImagePullSecrets(repo, secrets...)))
			for _, s := range tc.present {
				f.addSecret(s)
			}
			if tc.provider {
				f.keyring.provider = true
				f.keyring.creds = []Credential{{Auth: cri.Auth{Username: "u", Password: "p"}, Source: "plugin ecr"}}
			}
			var errs []error
			for range backoffLimit + 1 {
				errs = append(errs, tc.err("v1"))
			}
			f.images.set(img("v1"), &behaviour{errs: errs})
			f.start()

			got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
			attempts := backoffLimit + 1
			if tc.permanent {
				attempts = 1
				assert.Contains(t, got.Message, "; not retried: "+tc.why)
			} else {
				assert.NotContains(t, got.Message, "not retried")
			}
			assert.Equal(t, attempts, f.images.calls(), "PullImage calls")
			assert.Contains(t, got.Message, fmt.Sprintf("failed to pull %s after %d attempt", img("v1"), attempts))
			f.waitFor(func() bool {
				for _, e := range f.events() {
					if strings.Contains(e, EventPullFailed) {
						return !tc.permanent || strings.Contains(e, "not retried: "+tc.why)
					}
				}
				return false
			}, "Warning event with the reason it was not retried")
		})
	}
}
