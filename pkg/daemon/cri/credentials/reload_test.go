//go:build unix

package credentials

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"
)

// configMapVolume is a directory laid out as the kubelet writes a ConfigMap volume: the key is a
// symlink into ..data, itself a symlink to a timestamped directory; an update writes a new
// directory and swaps ..data atomically.
type configMapVolume struct {
	t       *testing.T
	dir     string
	version int
}

const configKey = "CredentialProviderPlugin.yaml"

func newConfigMapVolume(t *testing.T, content []byte) *configMapVolume {
	v := &configMapVolume{t: t, dir: t.TempDir()}
	v.update(content)
	require.NoError(t, os.Symlink(filepath.Join("..data", configKey), filepath.Join(v.dir, configKey)))
	return v
}

func (v *configMapVolume) path() string { return filepath.Join(v.dir, configKey) }

func (v *configMapVolume) update(content []byte) {
	v.version++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", v.version, v.version)
	require.NoError(v.t, os.Mkdir(filepath.Join(v.dir, ts), 0o755))
	require.NoError(v.t, os.WriteFile(filepath.Join(v.dir, ts, configKey), content, 0o644))
	tmp := filepath.Join(v.dir, "..data_tmp")
	require.NoError(v.t, os.Symlink(ts, tmp))
	require.NoError(v.t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
}

func configOf(t *testing.T, providers ...kubeletconfigv1.CredentialProvider) []byte {
	t.Helper()
	data, err := yaml.Marshal(kubeletconfigv1.CredentialProviderConfig{
		TypeMeta:  metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1", Kind: "CredentialProviderConfig"},
		Providers: providers,
	})
	require.NoError(t, err)
	return data
}

// reloadEvents records what a Reloader reported.
type reloadEvents struct {
	mu       sync.Mutex
	reloads  [][]string
	failures []string
}

func (e *reloadEvents) attach(r *Reloader) {
	r.OnReload = func(_ context.Context, names []string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.reloads = append(e.reloads, names)
	}
	r.OnError = func(_ context.Context, err error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.failures = append(e.failures, err.Error())
	}
}

func (e *reloadEvents) snapshot() ([][]string, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]string(nil), e.reloads...), append([]string(nil), e.failures...)
}

// sources lists where the credentials for image come from.
func sources(t *testing.T, r *Resolver, image string) []string {
	t.Helper()
	creds, problems := r.Lookup(context.Background(), image, nil)
	require.Empty(t, problems)
	var out []string
	for _, c := range creds {
		out = append(out, c.Source)
	}
	return out
}

// A changed ConfigMap is picked up without a restart: the next lookup uses the new providers.
func TestReloaderFollowsAConfigMapUpdate(t *testing.T) {
	bin := binDir(t, "alpha", "beta")
	vol := newConfigMapVolume(t, configOf(t, testProvider("alpha", []string{"*.alpha.example"})))
	r, err := NewReloader(vol.path(), bin)
	require.NoError(t, err)
	var ev reloadEvents
	ev.attach(r)
	res := r.Resolver()
	assert.Equal(t, []string{"plugin alpha"}, sources(t, res, "reg.alpha.example/app"))
	assert.Empty(t, sources(t, res, "reg.beta.example/app"))

	changed, err := r.Check(context.Background())
	require.NoError(t, err)
	assert.False(t, changed, "the same content is not loaded again")

	vol.update(configOf(t, testProvider("beta", []string{"*.beta.example"})))
	changed, err = r.Check(context.Background())
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Empty(t, sources(t, res, "reg.alpha.example/app"), "the old provider is gone")
	assert.Equal(t, []string{"plugin beta"}, sources(t, res, "reg.beta.example/app"))
	reloads, failures := ev.snapshot()
	assert.Equal(t, [][]string{{"beta"}}, reloads)
	assert.Empty(t, failures)
}

// An invalid config is reported once and the one in use is kept; a plugin binary that appears
// later makes the same config load on a later check.
func TestReloaderKeepsTheConfigInUseWhenTheNewOneIsInvalid(t *testing.T) {
	bin := binDir(t, "alpha")
	vol := newConfigMapVolume(t, configOf(t, testProvider("alpha", []string{"*.alpha.example"})))
	r, err := NewReloader(vol.path(), bin)
	require.NoError(t, err)
	var ev reloadEvents
	ev.attach(r)

	vol.update([]byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: \n"))
	_, err = r.Check(context.Background())
	require.Error(t, err)
	assert.ErrorContains(t, err, "still using the previous one")
	assert.Equal(t, []string{"plugin alpha"}, sources(t, r.Resolver(), "reg.alpha.example/app"), "still the previous config")

	vol.update(configOf(t, testProvider("gamma", []string{"*.gamma.example"})))
	for range 3 {
		_, err = r.Check(context.Background())
		assert.ErrorContains(t, err, "plugin binary "+filepath.Join(bin, "gamma")+" does not exist")
	}
	_, failures := ev.snapshot()
	require.Len(t, failures, 2, "each distinct failure is reported once: %v", failures)
	assert.Contains(t, failures[0], "not YAML or JSON")
	assert.Contains(t, failures[1], "gamma")
	assert.Equal(t, []string{"plugin alpha"}, sources(t, r.Resolver(), "reg.alpha.example/app"))

	require.NoError(t, os.Symlink(testPluginBin, filepath.Join(bin, "gamma")))
	changed, err := r.Check(context.Background())
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, []string{"plugin gamma"}, sources(t, r.Resolver(), "reg.gamma.example/app"))
}

func TestReloaderRunChecksEveryPeriod(t *testing.T) {
	bin := binDir(t, "alpha", "beta")
	vol := newConfigMapVolume(t, configOf(t, testProvider("alpha", []string{"*.alpha.example"})))
	r, err := NewReloader(vol.path(), bin)
	require.NoError(t, err)
	var ev reloadEvents
	ev.attach(r)
	clk := clocktesting.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, clk, 10*time.Second)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	vol.update(configOf(t, testProvider("beta", []string{"*.beta.example"})))
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	clk.Step(9 * time.Second)
	reloads, _ := ev.snapshot()
	assert.Empty(t, reloads, "not before the period")
	clk.Step(time.Second)
	require.Eventually(t, func() bool { reloads, _ := ev.snapshot(); return len(reloads) == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"plugin beta"}, sources(t, r.Resolver(), "reg.beta.example/app"))
}

func TestReloaderOff(t *testing.T) {
	vol := newConfigMapVolume(t, configOf(t, testProvider("alpha", []string{"*.alpha.example"})))
	r, err := NewReloader(vol.path(), binDir(t, "alpha"))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(context.Background(), clocktesting.NewFakeClock(time.Now()), 0)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run with period 0 must return at once")
	}
}

func TestNewReloaderRefusesAnInvalidConfig(t *testing.T) {
	vol := newConfigMapVolume(t, configOf(t, testProvider("alpha", []string{"*.alpha.example"})))
	_, err := NewReloader(vol.path(), t.TempDir())
	assert.ErrorContains(t, err, "does not exist")
	_, err = NewReloader(filepath.Join(t.TempDir(), "missing.yaml"), t.TempDir())
	assert.ErrorContains(t, err, "credential provider config")
}
