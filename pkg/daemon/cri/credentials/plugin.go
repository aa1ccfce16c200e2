package credentials

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/klog/v2"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

const (
	// maxStdout bounds a plugin's response.
	maxStdout = 1 << 20
	// maxStderr bounds the plugin stderr kept for the log.
	maxStderr = 1 << 10
	// waitDelay bounds the wait for a killed plugin's output pipes.
	waitDelay = 2 * time.Second
)

// provider is one configured exec plugin.
type provider struct {
	name                 string
	path                 string
	args                 []string
	env                  []string // NAME=VALUE, appended to the daemon's environment
	matchImages          []location
	defaultCacheDuration time.Duration
	needsToken           bool
	timeout              time.Duration
	metrics              *Metrics // nil: failures not counted

	cache *cache.Expiring // cacheKey -> []authPattern
	group singleflight.Group

	// testHookJoined, when set, runs once a lookup has joined (or started)
	// the plugin run for its image.
	testHookJoined func()
}

// cacheKey keys the credential cache; kind is the response's cacheKeyType.
type cacheKey struct {
	kind credentialproviderv1.PluginCacheKeyType
	key  string
}

func (p *provider) source() string { return "plugin " + p.name }

// matches reports whether one of the provider's matchImages matches img.
func (p *provider) matches(img imageRef) bool {
	for _, m := range p.matchImages {
		if m.matches(img.loc) {
			return true
		}
	}
	return false
}

// cached returns the cached auth patterns that may serve img, looking up
// the image key, then the registry key, then the global key.
func (p *provider) cached(img imageRef) ([]authPattern, bool) {
	for _, k := range []cacheKey{
		{credentialproviderv1.ImagePluginCacheKeyType, img.repo},
		{credentialproviderv1.RegistryPluginCacheKeyType, img.registry},
		{credentialproviderv1.GlobalPluginCacheKeyType, ""},
	} {
		if v, ok := p.cache.Get(k); ok {
			return v.([]authPattern), true
		}
	}
	return nil, false
}

// lookup returns the credentials the plugin gives for img, from the cache
// or by running the plugin. Concurrent lookups of one image share a run.
// The run is bounded by the plugin timeout, not by ctx: a caller whose ctx
// ends stops waiting, the run goes on for the others and the cache.
func (p *provider) lookup(ctx context.Context, img imageRef) ([]Credential, error) {
	if ps, ok := p.cached(img); ok {
		klog.FromContext(ctx).V(5).Info("Credential provider cache hit", "plugin", p.name, "image", img.repo)
		return matching(ps, img), nil
	}
	ch := p.group.DoChan(img.repo, func() (any, error) {
		if ps, ok := p.cached(img); ok {
			return ps, nil
		}
		return p.run(context.WithoutCancel(ctx), img)
	})
	if p.testHookJoined != nil {
		p.testHookJoined()
	}
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: image %s: %w", p.source(), img.repo, ctx.Err())
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return matching(res.Val.([]authPattern), img), nil
	}
}

// run executes the plugin for img, caches and returns its auth patterns.
func (p *provider) run(ctx context.Context, img imageRef) ([]authPattern, error) {
	fail := func(reason, format string, args ...any) error {
		p.metrics.failed(p.name, reason)
		return fmt.Errorf("%s: image %s: %s", p.source(), img.repo, fmt.Sprintf(format, args...))
	}
	req, err := json.Marshal(credentialproviderv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: pluginAPIVersion, Kind: "CredentialProviderRequest"},
		Image:    img.repo,
	})
	if err != nil {
		return nil, fail(errorExec, "encoding the request: %v", err)
	}

	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.path, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdin = bytes.NewReader(req)
	stdout := &cappedBuffer{limit: maxStdout}
	stderr := &cappedBuffer{limit: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// The plugin leads a process group of its own, so that a timeout kills
	// what it started too (a shell script's curl or sleep), not only the
	// plugin. Run always waits for the plugin; WaitDelay bounds the wait
	// for pipes held open by a child that escaped the group.
	ownProcessGroup(cmd)
	cmd.WaitDelay = waitDelay

	logger := klog.FromContext(ctx).WithValues("plugin", p.name, "image", img.repo)
	logger.V(4).Info("Running credential provider plugin")
	err = cmd.Run()
	// What the plugin printed on stderr is its own text: it may quote a
	// token or a cloud API's answer. It is logged at V(4), redacted, and
	// never put in the error, which reaches statuses and Events.
	if stderr.Len() > 0 {
		logger.V(4).Info("Credential provider plugin wrote to stderr", "stderr", stderr.redacted())
	}
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fail(errorTimeout, "timed out after %v and was killed", p.timeout)
	case err != nil:
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil, fail(errorExec, "plugin failed (%v)", exitErr.ProcessState)
		}
		return nil, fail(errorExec, "cannot run plugin: %v", err)
	case stdout.truncated:
		return nil, fail(errorInvalidResponse, "response is larger than %d bytes", maxStdout)
	}

	var resp credentialproviderv1.CredentialProviderResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fail(errorInvalidResponse, "response is not a JSON CredentialProviderResponse: %v", safeJSONError(err))
	}
	if resp.APIVersion != pluginAPIVersion || resp.Kind != "CredentialProviderResponse" {
		return nil, fail(errorInvalidResponse, "response has apiVersion %q, kind %q; want %s, CredentialProviderResponse",
			resp.APIVersion, resp.Kind, pluginAPIVersion)
	}
	var key cacheKey
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType:
		key = cacheKey{resp.CacheKeyType, img.repo}
	case credentialproviderv1.RegistryPluginCacheKeyType:
		key = cacheKey{resp.CacheKeyType, img.registry}
	case credentialproviderv1.GlobalPluginCacheKeyType:
		key = cacheKey{resp.CacheKeyType, ""}
	default:
		return nil, fail(errorInvalidResponse, "response has invalid cacheKeyType %q (want Image, Registry or Global)", resp.CacheKeyType)
	}

	var ps []authPattern
	for k, a := range resp.Auth {
		if a.Username == "" && a.Password == "" {
			continue
		}
		loc, err := parsePattern(k)
		if err != nil {
			// The key is a registry pattern, not a secret, unless it holds
			// user information: shownKey hides that, and the parse error
			// may quote part of it.
			if strings.Contains(k, "@") {
				err = errors.New("not a registry location")
			}
			logger.Info("Credential provider plugin returned an invalid auth key, ignored", "key", shownKey(k), "err", err)
			continue
		}
		ps = append(ps, authPattern{key: locationKey(loc), loc: loc, cred: Credential{
			Auth:   cri.Auth{Username: a.Username, Password: a.Password},
			Source: p.source(),
		}})
	}
	sortBySpecificity(ps)

	ttl := p.defaultCacheDuration
	if resp.CacheDuration != nil {
		ttl = resp.CacheDuration.Duration
	}
	if ttl > 0 {
		p.cache.Set(key, ps, ttl)
	}
	return ps, nil
}

// cappedBuffer keeps the first limit bytes written to it and drops the rest.
type cappedBuffer struct {
	bytes.Buffer
	limit     int
	truncated bool
}

func (b *cappedBuffer) Write(data []byte) (int, error) {
	if room := b.limit - b.Len(); room < len(data) {
		b.truncated = true
		if room > 0 {
			b.Buffer.Write(data[:room])
		}
		return len(data), nil
	}
	return b.Buffer.Write(data)
}

// redacted renders the captured stderr for a log line: one line, passed
// through cri.Redact.
func (b *cappedBuffer) redacted() string {
	s := cri.Redact(strings.ToValidUTF8(b.String(), "?"))
	if b.truncated {
		s += " [truncated]"
	}
	return s
}
