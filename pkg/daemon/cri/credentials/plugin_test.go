//go:build unix

package credentials

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/test/unit/metrictest"
)

// testPluginBin is the test plugin (testdata/testplugin) built by TestMain.
var testPluginBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "credentials-testplugin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testPluginBin = filepath.Join(dir, "testplugin")
	build := exec.Command("go", "build", "-o", testPluginBin, "./testdata/testplugin")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test plugin: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// binDir returns a fresh plugin directory holding the test plugin under
// each of names.
func binDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		require.NoError(t, os.Symlink(testPluginBin, filepath.Join(dir, n)))
	}
	return dir
}

// provider returns a CredentialProvider for the test plugin named name.
func testProvider(name string, matchImages []string, args ...string) kubeletconfigv1.CredentialProvider {
	return kubeletconfigv1.CredentialProvider{
		Name:                 name,
		MatchImages:          matchImages,
		DefaultCacheDuration: &metav1.Duration{Duration: time.Minute},
		APIVersion:           "credentialprovider.kubelet.k8s.io/v1",
		Args:                 args,
		Env:                  []kubeletconfigv1.ExecEnvVar{{Name: "TESTPLUGIN_PASSWORD", Value: "pw-" + name}},
	}
}

// loadTestPlugins writes a config of providers and loads it with a bin
// directory holding the test plugin under every provider's name.
func loadTestPlugins(t *testing.T, providers []kubeletconfigv1.CredentialProvider, opts ...Option) *Plugins {
	t.Helper()
	cfg := kubeletconfigv1.CredentialProviderConfig{
		TypeMeta:  metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1", Kind: "CredentialProviderConfig"},
		Providers: providers,
	}
	data, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	var names []string
	for _, p := range providers {
		names = append(names, p.Name)
	}
	ps, err := LoadPlugins(path, binDir(t, names...), opts...)
	require.NoError(t, err)
	return ps
}

// countFile returns a path for the plugin's invocation count.
func countFile(t *testing.T) string { return filepath.Join(t.TempDir(), "count") }

// invocations reads how often the plugin ran.
func invocations(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(data), "\n")
}

func lookup(t *testing.T, ps *Plugins, image string) ([]Credential, []error) {
	t.Helper()
	return NewResolver(ps).Lookup(context.Background(), image, nil)
}

func TestPluginSuccess(t *testing.T) {
	count := countFile(t)
	ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{
		testProvider("ecr", []string{"*.dkr.ecr.*.amazonaws.com"}, "-count", count, "-cache-key-type", "Image", "-cache-duration", "1m"),
	})
	assert.Equal(t, []string{"ecr"}, ps.Names())

	// The plugin gets the normalised repository (no tag or digest) and its
	// env from the config; its answer keyed by that repository matches.
	creds, problems := lookup(t, ps, "123.dkr.ecr.us-east-1.amazonaws.com/app:v1@sha256:0123")
	require.Empty(t, problems)
	assert.Equal(t, []string{"plugin ecr user:123.dkr.ecr.us-east-1.amazonaws.com/app:pw-ecr@"}, userPass(creds))
	assert.Equal(t, 1, invocations(t, count))

	// An image outside matchImages does not run the plugin.
	creds, problems = lookup(t, ps, "gcr.io/app")
	assert.Empty(t, creds)
	assert.Empty(t, problems)
	assert.Equal(t, 1, invocations(t, count))
}

func TestPluginAuthKeyMustMatch(t *testing.T) {
	ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{
		testProvider("p", []string{"*.example.com"}, "-auth-key", "other.example.com"),
	})
	creds, problems := lookup(t, ps, "reg.example.com/app")
	assert.Empty(t, problems)
	assert.Empty(t, creds, "an auth key that does not match the image gives nothing")
}

func TestPluginFailures(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    []string
		notWant string
		// reason is the label the failure is counted under.
		reason string
	}{
		{"non-zero exit with stderr", []string{"-mode", "fail"},
			[]string{"plugin p: image reg.example.com/app: plugin failed (exit status 3)"}, "registry said no", errorExec},
		{"hang is killed by the timeout", []string{"-mode", "hang"},
			[]string{"plugin p: image reg.example.com/app: timed out after 300ms and was killed"}, "", errorTimeout},
		{"garbage output", []string{"-mode", "garbage"},
			[]string{"plugin p: image reg.example.com/app: response is not a JSON CredentialProviderResponse"}, "", errorInvalidResponse},
		{"wrong apiVersion", []string{"-mode", "wrongapi"},
			[]string{`plugin p: image reg.example.com/app: response has apiVersion "credentialprovider.kubelet.k8s.io/v1alpha1"`}, "", errorInvalidResponse},
		{"invalid cacheKeyType", []string{"-cache-key-type", "Pod"},
			[]string{`plugin p: image reg.example.com/app: response has invalid cacheKeyType "Pod"`}, "", errorInvalidResponse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			metrics := NewMetrics()
			ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{
				testProvider("p", []string{"*.example.com"}, tc.args...),
			}, WithPluginTimeout(300*time.Millisecond), WithMetrics(metrics))
			defer func() {
				want := zeroSeries("p")
				want[`{provider="p",reason="`+tc.reason+`"}`] = 2
				assert.Equal(t, want, metrictest.Series(t, errorsName, metrics.Collectors()...))
			}()
			creds, problems := lookup(t, ps, "reg.example.com/app")
			assert.Empty(t, creds)
			require.Len(t, problems, 1)
			for _, w := range tc.want {
				assert.Contains(t, problems[0].Error(), w)
			}
			if tc.notWant != "" {
				assert.NotContains(t, problems[0].Error(), tc.notWant)
			}
			// A failure is not cached.
			_, problems = lookup(t, ps, "reg.example.com/app")
			assert.Len(t, problems, 1)
		})
	}
}

func TestPluginCache(t *testing.T) {
	type step struct {
		image       string
		advance     time.Duration
		invocations int    // after the lookup
		user        string // the username returned: which request it came from
	}
	const a, a2, b = "a.example.com/app", "a.example.com/other", "b.example.com/app"
	cases := []struct {
		name          string
		keyType       string
		duration      string // "" = absent
		defaultCache  time.Duration
		steps         []step
		wantNoCaching bool
	}{
		{"Image key", "Image", "10m", time.Minute, []step{
			{a, 0, 1, "user:" + a}, {a, 0, 1, "user:" + a}, {a2, 0, 2, "user:" + a2}, {a2, 0, 2, "user:" + a2},
		}, false},
		{"Registry key", "Registry", "10m", time.Minute, []step{
			{a, 0, 1, "user:" + a}, {a2, 0, 1, "user:" + a}, {b, 0, 2, "user:" + b},
		}, false},
		{"Global key", "Global", "10m", time.Minute, []step{
			{a, 0, 1, "user:" + a}, {a2, 0, 1, "user:" + a}, {b, 0, 1, "user:" + a},
		}, false},
		{"duration 0 does not cache", "Global", "0s", time.Hour, []step{
			{a, 0, 1, "user:" + a}, {a, 0, 2, "user:" + a}, {b, 0, 3, "user:" + b},
		}, false},
		{"absent duration uses defaultCacheDuration", "Image", "", 5 * time.Minute, []step{
			{a, 0, 1, "user:" + a}, {a, 4 * time.Minute, 1, "user:" + a}, {a, 2 * time.Minute, 2, "user:" + a},
		}, false},
		{"absent duration with defaultCacheDuration 0 does not cache", "Image", "", 0, []step{
			{a, 0, 1, "user:" + a}, {a, 0, 2, "user:" + a},
		}, false},
		{"expiry", "Registry", "10m", time.Minute, []step{
			{a, 0, 1, "user:" + a}, {a2, 9 * time.Minute, 1, "user:" + a}, {a2, 2 * time.Minute, 2, "user:" + a2},
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			count := countFile(t)
			args := []string{"-count", count, "-cache-key-type", tc.keyType, "-auth-key", "*.example.com"}
			if tc.duration != "" {
				args = append(args, "-cache-duration", tc.duration)
			}
			p := testProvider("p", []string{"*.example.com"}, args...)
			p.DefaultCacheDuration.Duration = tc.defaultCache
			clock := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{p}, WithClock(clock))
			for i, s := range tc.steps {
				clock.Step(s.advance)
				creds, problems := lookup(t, ps, s.image)
				require.Empty(t, problems, "step %d", i)
				require.Len(t, creds, 1, "step %d", i)
				assert.Equal(t, s.user, creds[0].Username, "step %d", i)
				assert.Empty(t, creds[0].ServerAddress, "step %d", i)
				assert.Equal(t, s.invocations, invocations(t, count), "step %d: invocations", i)
			}
		})
	}
}

// releasingPlugin returns a FIFO the test plugin (run with -release FIFO)
// blocks on before answering, and a function letting one run go on.
func releasingPlugin(t *testing.T) (fifo string, release func()) {
	t.Helper()
	fifo = filepath.Join(t.TempDir(), "release")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	return fifo, func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the plugin opens it
		require.NoError(t, err)
		_, err = f.Write([]byte{1})
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

func TestPluginSingleflight(t *testing.T) {
	const n = 8
	count := countFile(t)
	fifo, release := releasingPlugin(t)
	ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{
		// No caching: only singleflight can collapse the runs.
		testProvider("p", []string{"*.example.com"}, "-count", count, "-release", fifo, "-cache-duration", "0s"),
	}, WithPluginTimeout(30*time.Second))

	var joined sync.WaitGroup
	joined.Add(n)
	ps.providers[0].testHookJoined = joined.Done

	type result struct {
		creds    []Credential
		problems []error
	}
	results := make(chan result, n)
	for range n {
		go func() {
			creds, problems := NewResolver(ps).Lookup(context.Background(), "reg.example.com/app", nil)
			results <- result{creds, problems}
		}()
	}
	joined.Wait() // all n lookups wait on the one blocked run
	release()
	for range n {
		r := <-results
		assert.Empty(t, r.problems)
		assert.Equal(t, []string{"plugin p user:reg.example.com/app:pw-p@"}, userPass(r.creds))
	}
	assert.Equal(t, 1, invocations(t, count))
}

func TestPluginCallerCancelDoesNotCancelRun(t *testing.T) {
	count := countFile(t)
	fifo, release := releasingPlugin(t)
	ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{
		testProvider("p", []string{"*.example.com"}, "-count", count, "-release", fifo, "-cache-duration", "1h"),
	}, WithPluginTimeout(30*time.Second))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	creds, problems := NewResolver(ps).Lookup(ctx, "reg.example.com/app", nil)
	assert.Empty(t, creds)
	require.Len(t, problems, 1)
	assert.ErrorIs(t, problems[0], context.Canceled)
	assert.Contains(t, problems[0].Error(), "plugin p")

	// The run goes on: a later lookup joins it or finds its cached result.
	release()
	creds, problems = lookup(t, ps, "reg.example.com/app")
	assert.Empty(t, problems)
	assert.Len(t, creds, 1)
	assert.Equal(t, 1, invocations(t, count))
}

func TestPluginTokenAttributesSkipped(t *testing.T) {
	count := countFile(t)
	p := testProvider("needs-token", []string{"*.example.com"}, "-count", count)
	req := true
	p.TokenAttributes = &kubeletconfigv1.ServiceAccountTokenAttributes{
		ServiceAccountTokenAudience: "registry",
		CacheType:                   kubeletconfigv1.TokenServiceAccountTokenCacheType,
		RequireServiceAccount:       &req,
	}
	ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{p, testProvider("plain", []string{"*.example.com"})})

	creds, problems := lookup(t, ps, "reg.example.com/app")
	assert.Equal(t, []string{"plugin plain user:reg.example.com/app:pw-plain@"}, userPass(creds))
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Error(), "plugin needs-token: skipped")
	assert.Contains(t, problems[0].Error(), "tokenAttributes")
	assert.Equal(t, 0, invocations(t, count))

	// Not matching: not run, no problem.
	_, problems = lookup(t, ps, "gcr.io/app")
	assert.Empty(t, problems)
}

func TestResolverOrder(t *testing.T) {
	ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{
		testProvider("second", []string{"*.example.com"}),
		testProvider("first", []string{"reg.example.com/app"}),
		testProvider("unrelated", []string{"gcr.io"}),
	})
	secrets := []*corev1.Secret{dockerConfigJSONSecret("s", `{"reg.example.com":{"username":"su","password":"sp"}}`)}

	creds, problems := NewResolver(ps).Lookup(context.Background(), "reg.example.com/app:v1", secrets)
	require.Empty(t, problems)
	assert.Equal(t, []string{
		"secret ns/s su:sp@",
		"plugin second user:reg.example.com/app:pw-second@",
		"plugin first user:reg.example.com/app:pw-first@",
	}, userPass(creds))

	// Nothing matches: no credentials, no problems (pull anonymously).
	creds, problems = NewResolver(ps).Lookup(context.Background(), "nginx", secrets)
	assert.Empty(t, creds)
	assert.Empty(t, problems)

	// A failing plugin does not hide the other sources.
	bad := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{
		testProvider("broken", []string{"*.example.com"}, "-mode", "garbage"),
		testProvider("good", []string{"*.example.com"}),
	})
	creds, problems = NewResolver(bad).Lookup(context.Background(), "reg.example.com/app", secrets)
	assert.Equal(t, []string{
		"secret ns/s su:sp@",
		"plugin good user:reg.example.com/app:pw-good@",
	}, userPass(creds))
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Error(), "plugin broken")
}

func TestResolverHasProvider(t *testing.T) {
	p := testProvider("needs-token", []string{"gcr.io"})
	req := true
	p.TokenAttributes = &kubeletconfigv1.ServiceAccountTokenAttributes{
		ServiceAccountTokenAudience: "registry",
		CacheType:                   kubeletconfigv1.TokenServiceAccountTokenCacheType,
		RequireServiceAccount:       &req,
	}
	count := countFile(t)
	ps := loadTestPlugins(t, []kubeletconfigv1.CredentialProvider{
		testProvider("ecr", []string{"*.dkr.ecr.*.amazonaws.com"}, "-count", count), p,
	})
	r := NewResolver(ps)
	assert.True(t, r.HasProvider("123.dkr.ecr.us-east-1.amazonaws.com/app:v1"))
	assert.False(t, r.HasProvider("docker.io/library/nginx"), "no plugin matches")
	assert.False(t, r.HasProvider("gcr.io/app"), "a plugin skipped for its tokenAttributes never answers")
	assert.False(t, r.HasProvider("UPPER/case:bad tag"), "invalid reference")
	assert.Equal(t, 0, invocations(t, count), "asking runs no plugin")
	assert.False(t, NewResolver(nil).HasProvider("123.dkr.ecr.us-east-1.amazonaws.com/app"))
}
