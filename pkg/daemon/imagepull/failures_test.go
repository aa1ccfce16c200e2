package imagepull

import (
	"context"
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// The errors are what containerd (1.7, 2.x) and CRI-O return from
// PullImage, as the CRI client wraps them; failureClass sees them through
// DescribePullError, as attempt does.
func TestFailureClass(t *testing.T) {
	unknown := func(msg string) error { return status.Error(codes.Unknown, msg) }
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"401", unknown(`failed to pull and unpack image "registry.example.com/app:v1": failed to resolve reference "registry.example.com/app:v1": ` +
			`unexpected status from HEAD request to https://registry.example.com/v2/app/manifests/v1: 401 Unauthorized`), failureAuth},
		{"403", unknown(`failed to pull and unpack image "registry.example.com/app:v1": failed to resolve reference "registry.example.com/app:v1": ` +
			`unexpected status from HEAD request to https://registry.example.com/v2/app/manifests/v1: 403 Forbidden`), failureAuth},
		{"docker hub private", unknown(`failed to pull and unpack image "docker.io/library/private:v1": failed to resolve reference "docker.io/library/private:v1": ` +
			`pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`), failureAuth},
		{"no basic auth credentials", unknown(`failed to pull and unpack image "123.dkr.ecr.eu-west-1.amazonaws.com/app:v1": failed to resolve reference: no basic auth credentials`), failureAuth},
		{"PermissionDenied code", status.Error(codes.PermissionDenied, "denied"), failureAuth},
		{"containerd not found", status.Error(codes.NotFound, `failed to pull and unpack image "docker.io/library/busybox:nope": `+
			`failed to resolve reference "docker.io/library/busybox:nope": docker.io/library/busybox:nope: not found`), failureNotFound},
		{"404", unknown(`failed to pull and unpack image "registry.example.com/app:v1": failed to resolve reference "registry.example.com/app:v1": ` +
			`unexpected status from GET request to https://registry.example.com/v2/app/manifests/v1: 404 Not Found`), failureNotFound},
		{"CRI-O manifest unknown", unknown(`reading manifest v1 in registry.example.com/app: manifest unknown: manifest unknown`), failureNotFound},
		{"deadline code", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), failureTimeout},
		{"context deadline", context.DeadlineExceeded, failureTimeout},
		{"dial timeout", unknown(`failed to pull and unpack image "registry.example.com/app:v1": failed to resolve reference "registry.example.com/app:v1": ` +
			`failed to do request: Head "https://registry.example.com/v2/app/manifests/v1": dial tcp 10.0.0.1:443: i/o timeout`), failureTimeout},
		{"no progress", unknown(`failed to pull and unpack image "registry.example.com/app:v1": failed to copy: ` +
			`httpReadSeeker: failed open: cancelled because of no progress in 5m0s`), failureTimeout},
		{"invalid reference", unknown(`failed to parse image reference "registry.example.com/App:v1": invalid reference format: repository name (App) must be lowercase`), failureInvalid},
		{"invalid reference, CRI-O", unknown(`invalid reference format`), failureInvalid},
		{"no platform", unknown(`failed to pull and unpack image "registry.example.com/app:v1": no match for platform in manifest: not found`), failureInvalid},
		{"media type", unknown(`failed to pull and unpack image "registry.example.com/app:v1": failed to unpack image on snapshotter overlayfs: ` +
			`unsupported media type application/vnd.example.config.v1+json`), failureInvalid},
		{"503 blob", unknown(`failed to pull and unpack image "registry.example.com/app:v1": failed to copy: httpReadSeeker: failed open: ` +
			`unexpected status code https://registry.example.com/v2/app/blobs/sha256:ab: 503 Service Unavailable`), failureOther},
		{"runtime down", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: connection refused"`), failureOther},
		{"cancelled", context.Canceled, ""},
		{"cancelled code", status.Error(codes.Canceled, "context canceled"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, failureClass(cri.DescribePullError(errors.Join(tc.err))))
		})
	}
	assert.Equal(t, failureAuth, failureClass(reasonInvalidSecret, "pull secret \"a/b\" is not in namespace kruise-daemon-config"))
}

// Every failed attempt counts, retries included, by class; the series
// exist at zero before the first failure.
func TestFailedAttemptsAreCounted(t *testing.T) {
	const backoffLimit = 2
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, backoffLimit, 0)))))
	for _, c := range failureClasses {
		assert.Zero(t, f.failures(c), c)
	}
	// A matching provider keeps Unauthorized retried.
	f.keyring.provider = true
	f.keyring.creds = []Credential{{Auth: cri.Auth{Username: "u", Password: "p"}, Source: "plugin ecr"}}
	f.images.set(img("v1"), &behaviour{errs: []error{unauthorized("v1"), blobError("v1"), unauthorized("v1")}})
	f.start()

	f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Equal(t, 2.0, f.failures(failureAuth))
	assert.Equal(t, 1.0, f.failures(failureOther))
	assert.Zero(t, f.failures(failureNotFound))
	assert.Equal(t, 1.0, f.pulls(resultFailed))
}

// An attempt the tag's activeDeadlineSeconds cuts short comes back
// cancelled, but counts as a timeout.
func TestDeadlineCutAttemptCountsAsTimeout(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 3, 30)))))
	f.images.set(img("v1"), &behaviour{gate: make(chan struct{})})
	f.start()

	f.waitFor(func() bool { return f.images.calls() == 1 }, "pull started")
	f.clock.Step(30 * time.Second)
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Equal(t, 1.0, f.failures(failureTimeout))
	for _, c := range []string{failureAuth, failureNotFound, failureInvalid, failureOther} {
		assert.Zero(t, f.failures(c), c)
	}
}

func (f *fixture) failures(class string) float64 {
	var m dto.Metric
	require.NoError(f.t, f.metrics.failures.WithLabelValues(class).Write(&m))
	return m.GetCounter().GetValue()
}
