package credentials

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Reloader keeps a Resolver's plugins in step with the credential-provider
// config file. The file is usually a ConfigMap volume, which the kubelet
// updates in place (it swaps a symlink) when the ConfigMap changes, so the
// file is read again every period and, when its content has changed,
// loaded and checked as at start-up. A config that fails the checks (or a
// file that cannot be read) leaves the plugins in use as they were; it is
// tried again each period, as a plugin binary it names may appear later.
type Reloader struct {
	resolver   *Resolver
	path       string
	binDir     string
	opts       options
	inUse      []byte // the content of the config the plugins come from
	lastReport string // the last failure reported, "" after a success
	// OnReload is told the providers of a config once it is in use.
	OnReload func(ctx context.Context, providers []string)
	// OnError is told a failure to read or load the config, once per
	// distinct failure.
	OnError func(ctx context.Context, err error)
}

// NewReloader loads the config at path (see LoadPlugins; an invalid one is
// an error) into a new Resolver and returns the Reloader that keeps it
// current.
func NewReloader(path, binDir string, opts ...Option) (*Reloader, error) {
	o := newOptions(opts)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credential provider config: %w", err)
	}
	ps, err := loadPlugins(data, path, binDir, o)
	if err != nil {
		return nil, err
	}
	o.metrics.setProviders(ps.Names())
	return &Reloader{resolver: NewResolver(ps), path: path, binDir: binDir, opts: o, inUse: data}, nil
}

// Resolver returns the Resolver whose plugins the Reloader keeps current.
func (r *Reloader) Resolver() *Resolver { return r.resolver }

// Check reads the config file once and, if its content differs from the
// config in use, loads it and puts it in use. It reports whether it did.
// It is not safe for concurrent use (Run calls it).
func (r *Reloader) Check(ctx context.Context) (bool, error) {
	data, err := os.ReadFile(r.path)
	if err != nil {
		return false, r.failed(ctx, fmt.Errorf("credential provider config: %w; still using the previous one", err))
	}
	if bytes.Equal(data, r.inUse) {
		return false, nil
	}
	ps, err := loadPlugins(data, r.path, r.binDir, r.opts)
	if err != nil {
		return false, r.failed(ctx, fmt.Errorf("%w; still using the previous one", err))
	}
	r.resolver.SetPlugins(ps)
	r.opts.metrics.setProviders(ps.Names())
	r.inUse = data
	r.lastReport = ""
	klog.FromContext(ctx).Info("Reloaded the credential provider config", "path", r.path, "providers", ps.Names())
	if r.OnReload != nil {
		r.OnReload(ctx, ps.Names())
	}
	return true, nil
}

// failed reports err unless it is the failure reported last, and returns it.
func (r *Reloader) failed(ctx context.Context, err error) error {
	if err.Error() == r.lastReport {
		return err
	}
	r.lastReport = err.Error()
	klog.FromContext(ctx).Error(err, "Could not reload the credential provider config", "path", r.path)
	if r.OnError != nil {
		r.OnError(ctx, err)
	}
	return err
}

// Run calls Check every period until ctx ends. A period <= 0 turns
// reloading off.
func (r *Reloader) Run(ctx context.Context, clk clock.WithTicker, period time.Duration) {
	if period <= 0 {
		return
	}
	tick := clk.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			_, _ = r.Check(ctx)
		}
	}
}
