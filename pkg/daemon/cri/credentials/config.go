package credentials

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"
)

// DefaultPluginTimeout bounds one run of a credential-provider plugin when
// WithPluginTimeout is not given.
const DefaultPluginTimeout = time.Minute

// Option configures LoadPlugins.
type Option func(*options)

type options struct {
	timeout time.Duration
	clock   clock.Clock
	metrics *Metrics
}

// WithPluginTimeout bounds each plugin run (default DefaultPluginTimeout).
// A plugin still running then is killed and the run reported as failed.
// Values <= 0 are ignored.
func WithPluginTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithClock sets the clock of the credential caches (tests use a fake one).
func WithClock(c clock.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithMetrics counts the plugins' failed runs in m (default: not counted).
// LoadPlugins, NewReloader and Reloader.Check make m's series follow the
// providers they load.
func WithMetrics(m *Metrics) Option {
	return func(o *options) { o.metrics = m }
}

func newOptions(opts []Option) options {
	o := options{timeout: DefaultPluginTimeout, clock: clock.RealClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Plugins is a set of exec credential-provider plugins loaded from a
// kubelet CredentialProviderConfig. It is safe for concurrent use.
type Plugins struct {
	providers []*provider
}

// Names returns the names of the configured providers, in config order.
func (p *Plugins) Names() []string {
	if p == nil {
		return nil
	}
	names := make([]string, len(p.providers))
	for i, pr := range p.providers {
		names[i] = pr.name
	}
	return names
}

var (
	configGroupVersion = kubeletconfigv1.SchemeGroupVersion.String() // kubelet.config.k8s.io/v1
	configKind         = "CredentialProviderConfig"
	pluginAPIVersion   = credentialproviderv1.SchemeGroupVersion.String() // credentialprovider.kubelet.k8s.io/v1
)

// LoadPlugins reads the kubelet's credential-provider config file
// (the file given to --image-credential-provider-config, YAML or JSON,
// apiVersion kubelet.config.k8s.io/v1, kind CredentialProviderConfig) and
// checks every provider the way the kubelet does. binDir is the
// --image-credential-provider-bin-dir: each provider's name must be an
// executable file there.
//
// Decoding is strict (unknown or duplicate fields are errors), like the
// kubelet's. Only providers speaking credentialprovider.kubelet.k8s.io/v1
// are supported; v1alpha1 and v1beta1 providers are rejected. A config
// directory (several files) is not supported.
func LoadPlugins(configPath, binDir string, opts ...Option) (*Plugins, error) {
	o := newOptions(opts)
	data, err := os.ReadFile(configPath)
	if err != nil {
		return nil, fmt.Errorf("credential provider config: %w", err)
	}
	ps, err := loadPlugins(data, configPath, binDir, o)
	if err != nil {
		return nil, err
	}
	o.metrics.setProviders(ps.Names())
	return ps, nil
}

// loadPlugins is LoadPlugins on the content of the config file at configPath.
func loadPlugins(data []byte, configPath, binDir string, o options) (*Plugins, error) {
	cfg, err := decodeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("credential provider config %s: %w", configPath, err)
	}
	if err := validateConfig(cfg, binDir); err != nil {
		return nil, fmt.Errorf("credential provider config %s: %w", configPath, err)
	}
	ps := &Plugins{}
	for _, c := range cfg.Providers {
		env := make([]string, 0, len(c.Env))
		for _, e := range c.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		ps.providers = append(ps.providers, &provider{
			name:                 c.Name,
			path:                 filepath.Join(binDir, c.Name),
			args:                 append([]string(nil), c.Args...),
			env:                  env,
			matchImages:          mustParsePatterns(c.MatchImages),
			defaultCacheDuration: c.DefaultCacheDuration.Duration,
			needsToken:           c.TokenAttributes != nil,
			timeout:              o.timeout,
			metrics:              o.metrics,
			cache:                cache.NewExpiringWithClock(o.clock),
		})
	}
	return ps, nil
}

// decodeConfig decodes and type-checks a CredentialProviderConfig.
func decodeConfig(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	if tm.APIVersion != configGroupVersion || tm.Kind != configKind {
		return nil, fmt.Errorf("apiVersion %q, kind %q: want apiVersion %s, kind %s",
			tm.APIVersion, tm.Kind, configGroupVersion, configKind)
	}
	var cfg kubeletconfigv1.CredentialProviderConfig
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// validateConfig checks cfg like the kubelet and returns all problems found.
func validateConfig(cfg *kubeletconfigv1.CredentialProviderConfig, binDir string) error {
	var errs []error
	if len(cfg.Providers) == 0 {
		errs = append(errs, errors.New("providers: at least one provider is required"))
	}
	seen := map[string]bool{}
	for i, p := range cfg.Providers {
		field := fmt.Sprintf("providers[%d]", i)
		if p.Name != "" {
			field = fmt.Sprintf("providers[%d] (%s)", i, p.Name)
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf(field+": "+format, args...))
		}
		switch {
		case p.Name == "":
			bad("name is required")
		case p.Name == "." || p.Name == "..":
			bad("name cannot be %q", p.Name)
		case strings.ContainsAny(p.Name, `/\`):
			bad("name must be a file name, not a path")
		case strings.ContainsAny(p.Name, " \t\r\n"):
			bad("name cannot contain spaces")
		case seen[p.Name]:
			bad("duplicate name")
		default:
			seen[p.Name] = true
			if err := checkExecutable(filepath.Join(binDir, p.Name)); err != nil {
				bad("%v", err)
			}
		}
		switch p.APIVersion {
		case "":
			bad("apiVersion is required")
		case pluginAPIVersion:
		default:
			bad("apiVersion %q is not supported (only %s)", p.APIVersion, pluginAPIVersion)
		}
		if len(p.MatchImages) == 0 {
			bad("matchImages: at least one pattern is required")
		}
		for _, m := range p.MatchImages {
			if err := ValidatePattern(m); err != nil {
				bad("matchImages: %q is invalid: %v", m, err)
			}
		}
		switch {
		case p.DefaultCacheDuration == nil:
			bad("defaultCacheDuration is required")
		case p.DefaultCacheDuration.Duration < 0:
			bad("defaultCacheDuration must be >= 0")
		}
		for j, e := range p.Env {
			if e.Name == "" || strings.ContainsAny(e.Name, "=\x00") {
				bad("env[%d]: invalid name %q", j, e.Name)
			}
		}
	}
	return errors.Join(errs...)
}

// checkExecutable checks that path is an executable regular file.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("plugin binary %s does not exist", path)
		}
		return fmt.Errorf("plugin binary: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("plugin binary %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("plugin binary %s is not executable", path)
	}
	return nil
}

// mustParsePatterns parses validated patterns.
func mustParsePatterns(patterns []string) []location {
	out := make([]location, 0, len(patterns))
	for _, m := range patterns {
		loc, err := parsePattern(m)
		if err != nil {
			panic(fmt.Sprintf("validated pattern %q: %v", m, err))
		}
		out = append(out, loc)
	}
	return out
}
