package credentials

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// Credential is one candidate credential for a registry. Source says where
// it came from, for logs and statuses ("secret ns/name", "plugin NAME"); it
// never holds secret material. The embedded cri.Auth does: never log it.
type Credential struct {
	cri.Auth
	Source string
}

// Resolver finds the credentials for an image: first from the pull secrets
// given to Lookup, then from the exec credential-provider plugins. It is
// safe for concurrent use.
type Resolver struct {
	plugins atomic.Pointer[Plugins]
}

// NewResolver returns a Resolver using plugins, which may be nil (pull
// secrets only).
func NewResolver(plugins *Plugins) *Resolver {
	r := &Resolver{}
	r.plugins.Store(plugins)
	return r
}

// SetPlugins replaces the plugins (nil: pull secrets only); lookups that
// have begun finish with the previous ones.
func (r *Resolver) SetPlugins(plugins *Plugins) {
	r.plugins.Store(plugins)
}

// Lookup returns the candidate credentials for image, to be tried in order:
// the matching entries of the pull secrets (most specific registry key
// first; equally specific ones in the order of secrets), then the
// credentials of every plugin whose matchImages match the image, in config
// order. ServerAddress is left empty (see matching). No credentials
// means: pull anonymously.
//
// problems lists what could not be used: secrets of the wrong type or with
// unparsable content, plugins that failed, timed out, or were skipped
// because they need a service-account token (tokenAttributes), which a
// pre-pull has none of. Each names its secret or plugin and holds no
// credential, so it may be shown in a status. Problems do not stop the
// lookup. An invalid image reference is a problem and yields nothing.
func (r *Resolver) Lookup(ctx context.Context, image string, secrets []*corev1.Secret) (creds []Credential, problems []error) {
	img, err := parseImage(image)
	if err != nil {
		return nil, []error{err}
	}
	patterns, problems := secretPatterns(secrets)
	creds = matching(patterns, img)
	var plugins *Plugins
	if r != nil {
		plugins = r.plugins.Load()
	}
	if plugins != nil {
		for _, p := range plugins.providers {
			if !p.matches(img) {
				continue
			}
			if p.needsToken {
				problems = append(problems, fmt.Errorf(
					"%s: skipped for image %s: it needs a pod's service-account token (tokenAttributes), which a pre-pull does not have",
					p.source(), img.repo))
				continue
			}
			got, err := p.lookup(ctx, img)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			creds = append(creds, got...)
		}
	}
	return creds, problems
}

// HasProvider reports whether a plugin that Lookup would run matches image:
// its answer may change from one lookup to the next, unlike the absence of
// pull secrets. Plugins skipped for their tokenAttributes do not count; an
// invalid image reference matches none.
func (r *Resolver) HasProvider(image string) bool {
	if r == nil {
		return false
	}
	plugins := r.plugins.Load()
	if plugins == nil {
		return false
	}
	img, err := parseImage(image)
	if err != nil {
		return false
	}
	for _, p := range plugins.providers {
		if !p.needsToken && p.matches(img) {
			return true
		}
	}
	return false
}
