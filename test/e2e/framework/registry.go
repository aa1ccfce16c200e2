package framework

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Credentials of the loopback registry's protected prefixes (hack/lib.sh sets the same defaults).
type Credentials struct{ Username, Password string }

// BasicCredentials open repositories under basic/.
func BasicCredentials() Credentials {
	return Credentials{envOr("REGISTRY_USER", "kruise"), envOr("REGISTRY_BASIC_PASSWORD", "kruise-basic-pw")}
}

// TokenCredentials obtain bearer tokens for repositories under token/.
func TokenCredentials() Credentials {
	return Credentials{envOr("REGISTRY_USER", "kruise"), envOr("REGISTRY_TOKEN_PASSWORD", "kruise-token-pw")}
}

// CreatePullSecret creates a kubernetes.io/dockerconfigjson secret for the loopback registry.
func (f *Framework) CreatePullSecret(ctx context.Context, t testing.TB, namespace, name string, c Credentials) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{
		f.Registry: map[string]string{"username": c.Username, "password": c.Password, "auth": auth},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pull secret %s/%s: %v", namespace, name, err)
	}
}

// RegistryLog is the loopback registry's log on the local cluster (one line per request, with the
// injected faults of the flaky/, drop/, broken/ and stall/ prefixes noted in its auth field).
var RegistryLog = envOr("KRUISE_E2E_REGISTRY_LOG", "/var/tmp/kruise-local/logs/registry.log")

// RegistryLogLines returns the lines of the registry's log about blobs of repo (the repository
// path without the registry host, e.g. "flaky/2/e2e-abc") that contain note (e.g.
// "injected 503"). It returns nil when the log is not there (another kind of cluster).
func RegistryLogLines(t testing.TB, repo, note string) []string {
	t.Helper()
	raw, err := os.ReadFile(RegistryLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the registry's log: %v", err)
	}
	var out []string
	blobs := "/v2/" + repo + "/blobs/"
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, blobs) && strings.Contains(line, note) {
			out = append(out, line)
		}
	}
	return out
}

// UniqueImage returns a reference to a new image of the loopback registry under prefix (e.g.
// "public/"), with a random repository name and tag so that no node has it yet.
func (f *Framework) UniqueImage(prefix string) string {
	return f.Image(fmt.Sprintf("%se2e-%s:v-%s", prefix, rand.String(8), rand.String(5)))
}

// PushImage pushes a tiny random image (one small layer) to ref, with creds or anonymously, and
// returns its digest.
func PushImage(t testing.TB, ref string, creds *Credentials) string {
	t.Helper()
	digest, err := pushImage(ref, creds)
	if err != nil {
		t.Fatalf("pushing image %s: %v", ref, err)
	}
	return digest
}

func pushImage(ref string, creds *Credentials) (string, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	img, err := random.Image(512, 1)
	if err != nil {
		return "", err
	}
	auth := authn.Anonymous
	if creds != nil {
		auth = &authn.Basic{Username: creds.Username, Password: creds.Password}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := remote.Write(r, img, remote.WithAuth(auth), remote.WithContext(ctx)); err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// RegistryHasPrefix pushes a probe image under prefix and reports whether the registry serves
// that prefix (false when it answers 404 NAME_UNKNOWN), failing the test on other errors.
func (f *Framework) RegistryHasPrefix(t testing.TB, prefix string) bool {
	t.Helper()
	_, err := pushImage(f.Image(prefix+"e2e-probe:"+rand.String(5)), nil)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == 404 {
		return false
	}
	if err != nil {
		t.Fatalf("probing registry prefix %s: %v", prefix, err)
	}
	return true
}

// BusyboxVariant pushes, under a new public/ repository, the loopback registry's busybox with one
// more small layer: an image that runs as busybox does but has a digest of its own, for updates
// that change a container's image. It returns the new reference.
func (f *Framework) BusyboxVariant(t testing.TB) string {
	t.Helper()
	return f.Variant(t, "public/busybox:1.35", 256)
}

// Variant pushes, under a new public/ repository, the loopback registry's image repoTag with one
// more random layer of layerBytes: the same program under a digest of its own (and, for a large
// layer, an image that takes that long to pull). It returns the new reference.
func (f *Framework) Variant(t testing.TB, repoTag string, layerBytes int64) string {
	t.Helper()
	return f.pushDerived(t, repoTag, 5*time.Minute, func(base v1.Image) (v1.Image, error) {
		extra, err := random.Layer(layerBytes, types.DockerLayer)
		if err != nil {
			return nil, err
		}
		return mutate.AppendLayers(base, extra)
	})
}

// pushDerived reads the loopback registry's image repoTag, derives another image from it and
// pushes that under a new public/ repository, all within timeout. It returns the new reference.
func (f *Framework) pushDerived(t testing.TB, repoTag string, timeout time.Duration, derive func(v1.Image) (v1.Image, error)) string {
	t.Helper()
	src, err := name.ParseReference(f.Image(repoTag), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	base, err := remote.Image(src, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("reading %s: %v", src, err)
	}
	img, err := derive(base)
	if err != nil {
		t.Fatalf("deriving an image from %s: %v", src, err)
	}
	ref := f.UniqueImage("public/")
	dst, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(dst, img, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return ref
}
