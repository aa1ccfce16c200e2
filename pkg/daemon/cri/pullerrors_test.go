package cri_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// wrapped is how remoteRuntime.PullImage returns a runtime error.
func wrapped(code codes.Code, msg string) error {
	return fmt.Errorf("CRI PullImage some/image:1: %w", status.Error(code, msg))
}

func TestDescribePullError(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		wantReason string
		// wantMsg is the exact message; when empty, the runtime's message
		// is expected unchanged.
		wantMsg string
	}{
		{
			name:       "containerd 1.6 tag not found",
			err:        wrapped(codes.NotFound, `failed to pull and unpack image "docker.io/library/busybox:nope": failed to resolve reference "docker.io/library/busybox:nope": docker.io/library/busybox:nope: not found`),
			wantReason: cri.PullReasonNotFound,
		},
		{
			name:       "containerd not found with code Unknown",
			err:        wrapped(codes.Unknown, `failed to pull and unpack image "127.0.0.1:5000/public/nope:1": failed to resolve reference "127.0.0.1:5000/public/nope:1": 127.0.0.1:5000/public/nope:1: not found`),
			wantReason: cri.PullReasonNotFound,
		},
		{
			name:       "CRI-O manifest unknown",
			err:        wrapped(codes.Unknown, `reading manifest nope in quay.io/crio/busybox: manifest unknown: manifest unknown`),
			wantReason: cri.PullReasonNotFound,
		},
		{
			name:       "containerd 401 on manifest HEAD",
			err:        wrapped(codes.Unknown, `failed to pull and unpack image "127.0.0.1:5000/basic/busybox:1.35": failed to resolve reference "127.0.0.1:5000/basic/busybox:1.35": unexpected status from HEAD request to http://127.0.0.1:5000/v2/basic/busybox/manifests/1.35: 401 Unauthorized`),
			wantReason: cri.PullReasonUnauthorized,
		},
		{
			name:       "containerd oauth token refused",
			err:        wrapped(codes.Unknown, `failed to pull and unpack image "registry.example.com/team/app:1.0": failed to resolve reference "registry.example.com/team/app:1.0": failed to authorize: failed to fetch oauth token: unexpected status from POST request to https://registry.example.com/token?scope=repository%3Ateam%2Fapp%3Apull&service=registry.example.com: 401 Unauthorized`),
			wantReason: cri.PullReasonUnauthorized,
		},
		{
			name:       "containerd 403",
			err:        wrapped(codes.Unknown, `failed to pull and unpack image "gcr.io/private/app:v1": failed to resolve reference "gcr.io/private/app:v1": unexpected status from HEAD request to https://gcr.io/v2/private/app/manifests/v1: 403 Forbidden`),
			wantReason: cri.PullReasonUnauthorized,
		},
		{
			name:       "docker hub private or missing repository",
			err:        wrapped(codes.Unknown, `failed to pull and unpack image "docker.io/acme/private:1": failed to resolve reference "docker.io/acme/private:1": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`),
			wantReason: cri.PullReasonUnauthorized,
		},
		{
			name:       "cri-dockerd without credentials",
			err:        wrapped(codes.Unknown, `Error response from daemon: Head "https://123456789012.dkr.ecr.eu-west-1.amazonaws.com/v2/app/manifests/1": no basic auth credentials`),
			wantReason: cri.PullReasonUnauthorized,
		},
		{
			name:       "CRI-O unauthorized",
			err:        wrapped(codes.Unknown, `initializing source docker://quay.io/private/app:1: reading manifest 1 in quay.io/private/app: unauthorized: access to the requested resource is not authorized`),
			wantReason: cri.PullReasonUnauthorized,
		},
		{
			name:       "our deadline",
			err:        wrapped(codes.DeadlineExceeded, "context deadline exceeded"),
			wantReason: cri.PullReasonTimeout,
		},
		{
			name:       "plain context deadline",
			err:        fmt.Errorf("pulling: %w", context.DeadlineExceeded),
			wantReason: cri.PullReasonTimeout,
			wantMsg:    "pulling: context deadline exceeded",
		},
		{
			name:       "registry network timeout, signed blob URL redacted",
			err:        wrapped(codes.Unknown, `failed to pull and unpack image "quay.io/org/app:1": failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://cdn01.quay.io/quayio-production-s3/sha256/ab/abcd?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20240101%2Fus-east-1&X-Amz-Signature=deadbeef01": dial tcp 10.1.2.3:443: i/o timeout`),
			wantReason: cri.PullReasonTimeout,
			wantMsg:    `failed to pull and unpack image "quay.io/org/app:1": failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://cdn01.quay.io/quayio-production-s3/sha256/ab/abcd?X-Amz-Algorithm=redacted&X-Amz-Credential=redacted&X-Amz-Signature=redacted": dial tcp 10.1.2.3:443: i/o timeout`,
		},
		{
			name:       "cancelled by us",
			err:        wrapped(codes.Canceled, "context canceled"),
			wantReason: cri.PullReasonCancelled,
		},
		{
			name:       "plain context cancel",
			err:        context.Canceled,
			wantReason: cri.PullReasonCancelled,
			wantMsg:    "context canceled",
		},
		{
			name:       "runtime-side cancel reported as Unknown",
			err:        wrapped(codes.Unknown, `failed to pull and unpack image "registry.local/big:1": failed to copy: httpReadSeeker: failed open: context canceled`),
			wantReason: cri.PullReasonCancelled,
		},
		{
			name:       "runtime socket gone",
			err:        wrapped(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory"`),
			wantReason: cri.PullReasonUnavailable,
		},
		{
			name:       "untrusted certificate",
			err:        wrapped(codes.Unknown, `failed to pull and unpack image "registry.local/app:1": failed to resolve reference "registry.local/app:1": failed to do request: Head "https://registry.local/v2/app/manifests/1": tls: failed to verify certificate: x509: certificate signed by unknown authority`),
			wantReason: cri.PullReasonFailed,
		},
		{
			name:       "unknown host",
			err:        wrapped(codes.Unknown, `pinging container registry registry.example.com: Get "https://registry.example.com/v2/": dial tcp: lookup registry.example.com on 10.96.0.10:53: no such host`),
			wantReason: cri.PullReasonFailed,
		},
		{
			name:       "not a gRPC error",
			err:        errors.New("something odd"),
			wantReason: cri.PullReasonFailed,
			wantMsg:    "something odd",
		},
		{
			name:       "multi-line message, user info and bearer token",
			err:        wrapped(codes.Unknown, "failed to pull image:\n  Get \"https://robot:s3cret@registry.local/v2/\":\tAuthorization: Bearer eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.abc\n  connection reset by peer  "),
			wantReason: cri.PullReasonFailed,
			wantMsg:    `failed to pull image: Get "https://registry.local/v2/": Authorization: Bearer [redacted] connection reset by peer`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := cri.DescribePullError(tc.err)
			assert.Equal(t, tc.wantReason, reason)
			want := tc.wantMsg
			if want == "" {
				want = status.Convert(errors.Unwrap(tc.err)).Message()
			}
			assert.Equal(t, want, msg)
			assert.NotContains(t, msg, "\n")
			assert.NotContains(t, msg, "rpc error:")
			assert.NotContains(t, msg, "CRI PullImage", "our own wrapping is not the runtime's wording")
		})
	}
}

func TestDescribePullErrorNil(t *testing.T) {
	reason, msg := cri.DescribePullError(nil)
	assert.Empty(t, reason)
	assert.Empty(t, msg)
}

func TestDescribePullErrorTruncates(t *testing.T) {
	long := "failed to pull and unpack image: " + strings.Repeat("é", 1000)
	_, msg := cri.DescribePullError(status.Error(codes.Unknown, long))
	assert.LessOrEqual(t, len(msg), cri.MaxPullMessageLen)
	assert.True(t, strings.HasSuffix(msg, "..."), msg)
	assert.True(t, utf8.ValidString(msg), "cut on a rune boundary")
	assert.True(t, strings.HasPrefix(msg, "failed to pull and unpack image: é"))
}

func TestDescribePullErrorNestedStatusText(t *testing.T) {
	// A status flattened to text by some layer in between.
	err := errors.New("rpc error: code = NotFound desc = failed to resolve reference \"x/y:1\": x/y:1: not found")
	reason, msg := cri.DescribePullError(err)
	assert.Equal(t, cri.PullReasonNotFound, reason)
	assert.Equal(t, `failed to resolve reference "x/y:1": x/y:1: not found`, msg)
}
