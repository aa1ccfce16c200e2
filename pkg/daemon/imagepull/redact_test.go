//go:build unix

package imagepull

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/textlogger"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri/credentials"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// resolverKeyring is the daemon's adapter of the credentials resolver.
type resolverKeyring struct{ r *credentials.Resolver }

func (k resolverKeyring) Lookup(ctx context.Context, image string, secrets []*corev1.Secret) ([]Credential, []error) {
	found, problems := k.r.Lookup(ctx, image, secrets)
	out := make([]Credential, 0, len(found))
	for _, c := range found {
		out = append(out, Credential{Auth: c.Auth, Source: c.Source})
	}
	return out, problems
}

func (k resolverKeyring) HasProvider(image string) bool { return k.r.HasProvider(image) }

// syncBuffer is a log sink shared by the puller's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Secrets in a failing credential plugin's stderr and in the registry's
// answer quoted by the runtime never reach the NodeImage status, its
// Events or the log, at the chart's verbosity (2) or at 10. The plugin's
// stderr does not reach the status or Events at all: they say that the
// plugin failed and its exit status. The default log has the cleaned
// message; stderr is logged only from -v=4, redacted.
func TestSecretsStayOutOfStatusEventsAndLogs(t *testing.T) {
	secrets := []string{"stsSig0123456789", "FwoGZXIvYXdzSessionTok", "refreshTok0123456789",
		"accessTok0123456789", "bearerTok0123456789", "robotPassw0rd12345"}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "noisy"), []byte(`#!/bin/sh
echo 'STDERR-MARKER calling https://sts.example.com/?X-Amz-Signature=`+secrets[0]+` failed' >&2
echo '{"Credentials":{"SessionToken":"`+secrets[1]+`"}}' >&2
exit 3
`), 0o755))
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: noisy
    matchImages: ["registry.example.com"]
    defaultCacheDuration: 1m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
`), 0o600))
	plugins, err := credentials.LoadPlugins(config, bin, credentials.WithPluginTimeout(10*time.Second))
	require.NoError(t, err)

	registryAnswer := fmt.Sprintf(`failed to pull and unpack image %q: failed to resolve reference %q: failed to authorize: `+
		`failed to fetch oauth token: unexpected status from POST request to https://auth.example.com/token?service=r&refresh_token=%s: `+
		`401 Unauthorized: {"details":"denied","access_token":%q} (sent Authorization: Bearer %s) via http://robot:%s@proxy.example.com:3128`,
		img("v1"), img("v1"), secrets[2], secrets[3], secrets[4], secrets[5])

	for _, v := range []int{2, 10} {
		t.Run(fmt.Sprintf("v=%d", v), func(t *testing.T) {
			f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 0, 0)))),
				func(c *Config) { c.Keyring = resolverKeyring{credentials.NewResolver(plugins)} })
			f.images.set(img("v1"), &behaviour{errs: []error{status.Error(codes.Unknown, registryAnswer)}})
			var logs syncBuffer
			f.startLogging(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs), textlogger.Verbosity(v))))

			got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
			assert.Contains(t, got.Message, "Unauthorized: failed to pull and unpack image")
			assert.Contains(t, got.Message, "credential problems: plugin noisy: image registry.example.com/app: plugin failed (exit status 3)")
			var evs []string
			f.waitFor(func() bool {
				evs = append(evs, f.events()...)
				return strings.Contains(strings.Join(evs, "\n"), EventPullFailed)
			}, "failure event")
			f.waitFor(func() bool { return strings.Contains(logs.String(), "Failed to pull image") }, "failure logged")
			f.stopOnce()

			texts := map[string]string{"status": got.Message, "events": strings.Join(evs, "\n"), "log": logs.String()}
			for what, text := range texts {
				for _, s := range secrets {
					assert.NotContains(t, text, s, "%s at -v=%d", what, v)
				}
				if what != "log" || v < 4 {
					assert.NotContains(t, text, "STDERR-MARKER", "the plugin's stderr in the %s at -v=%d", what, v)
				}
			}
			if v >= 4 {
				assert.Contains(t, logs.String(), "STDERR-MARKER", "stderr is logged, redacted, at -v=%d", v)
			}
		})
	}
}
