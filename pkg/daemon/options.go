// Package daemon wires kruise-daemon: the node-scoped informers, the
// connection to the node's container runtime, health and metrics.
package daemon

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/imagepull"
	"github.com/nodekruise/kruise/pkg/process/cli"
)

// NodeNameEnv is the environment variable the DaemonSet fills from the
// pod's spec.nodeName through the downward API.
const NodeNameEnv = "NODE_NAME"

// PodNamespaceEnv is filled from metadata.namespace by the downward API.
const PodNamespaceEnv = "POD_NAMESPACE"

// DefaultNamespace is where kruise is installed.
const DefaultNamespace = "kruise-system"

// DefaultAddr is the health and metrics address. It is not OpenKruise's
// daemon port, 10221: both daemons run on the host network, and ours must be
// able to start on a node where OpenKruise's daemon still runs, long enough
// to notice it and refuse to act, instead of crash-looping on a taken port.
const DefaultAddr = ":10223"

// Options configures the daemon.
type Options struct {
	// NodeName is the node this daemon serves; defaults to $NODE_NAME.
	NodeName string
	// Kube configures the API client.
	Kube cli.KubeOptions
	// RuntimeEndpoint, when set, is the CRI socket to use (path or unix:// URL).
	// Validate fills it from SocketFile.
	RuntimeEndpoint string
	// HostRunDir is where candidate CRI sockets are probed when
	// RuntimeEndpoint is empty.
	HostRunDir string
	// SocketFile, when set, names the CRI socket by its path under
	// HostRunDir (OpenKruise's --socket-file, e.g. "k3s/containerd/containerd.sock"):
	// the daemon uses exactly that socket and probes nothing. It excludes
	// RuntimeEndpoint.
	SocketFile string
	// socketEndpoint is the RuntimeEndpoint Validate derived from SocketFile,
	// so that validating twice does not see two endpoints.
	socketEndpoint string
	// RuntimeWait is how long start-up keeps retrying to reach the runtime.
	RuntimeWait time.Duration
	// CRIProbeInterval is how often the runtime is asked for its version to
	// back /readyz and kruise_daemon_cri_up.
	CRIProbeInterval time.Duration
	// CRIProbeTimeout bounds each CRI Version call (discovery and probes).
	CRIProbeTimeout time.Duration
	// RuntimeRequestTimeout bounds each CRI call that has no deadline of its own, as the
	// kubelet's --runtime-request-timeout.
	RuntimeRequestTimeout time.Duration
	// Addr is the health and metrics listen address.
	Addr string
	// Namespace holds the daemon's heartbeat Lease; defaults to
	// $POD_NAMESPACE, else kruise-system.
	Namespace string
	// CRRWorkers is how many pods' ContainerRecreateRequests are executed
	// in parallel.
	CRRWorkers int

	// MaxConcurrentPulls bounds the image pulls of NodeImage tags running
	// at once on this node.
	MaxConcurrentPulls int
	// CredentialProviderConfig and CredentialProviderBinDir configure exec
	// credential-provider plugins exactly like the kubelet's
	// --image-credential-provider-config / --image-credential-provider-bin-dir;
	// empty: pull secrets only.
	CredentialProviderConfig string
	CredentialProviderBinDir string
	// CredentialProviderTimeout bounds one plugin call.
	CredentialProviderTimeout time.Duration
	// CredentialProviderReloadPeriod is how often the config file is read
	// again to pick up a changed config (0: never).
	CredentialProviderReloadPeriod time.Duration
}

// NewOptions returns the defaults, with NodeName taken from $NODE_NAME.
func NewOptions() *Options {
	ns := os.Getenv(PodNamespaceEnv)
	if ns == "" {
		ns = DefaultNamespace
	}
	return &Options{
		Namespace:             ns,
		NodeName:              os.Getenv(NodeNameEnv),
		Kube:                  cli.NewKubeOptions(),
		HostRunDir:            cri.DefaultHostRunDir,
		RuntimeWait:           30 * time.Second,
		CRIProbeInterval:      10 * time.Second,
		CRIProbeTimeout:       cri.DefaultProbeTimeout,
		RuntimeRequestTimeout: cri.DefaultCallTimeout,
		Addr:                  DefaultAddr,
		CRRWorkers:            4,

		MaxConcurrentPulls:             imagepull.DefaultMaxConcurrentPulls,
		CredentialProviderTimeout:      time.Minute,
		CredentialProviderReloadPeriod: 10 * time.Second,
	}
}

// AddFlags registers the daemon's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.NodeName, "node-name", o.NodeName,
		"Name of the node this daemon runs on. Defaults to $"+NodeNameEnv+" (set it from spec.nodeName with the downward API).")
	o.Kube.AddFlags(fs)
	fs.StringVar(&o.RuntimeEndpoint, "runtime-endpoint", o.RuntimeEndpoint,
		"CRI socket of the container runtime, as a path or unix:// URL. Empty: probe the well-known sockets under --host-run-dir.")
	fs.StringVar(&o.HostRunDir, "host-run-dir", o.HostRunDir,
		"Directory holding the host's runtime sockets (the host's /var/run; the DaemonSet mounts it at /hostvarrun). Probed in order: containerd/containerd.sock, containerd.sock, crio/crio.sock, crio.sock, cri-dockerd.sock.")
	fs.StringVar(&o.SocketFile, "socket-file", o.SocketFile,
		"Path of the container runtime's CRI socket relative to --host-run-dir, e.g. containerd/containerd.sock, k3s/containerd/containerd.sock or criproxy.sock "+
			"(OpenKruise's flag). When set the daemon uses exactly unix://<host-run-dir>/<socket-file> and probes nothing. Empty: probe. "+
			"Not together with --runtime-endpoint.")
	fs.DurationVar(&o.RuntimeWait, "runtime-wait", o.RuntimeWait,
		"How long start-up keeps retrying to reach the container runtime before giving up.")
	fs.DurationVar(&o.CRIProbeInterval, "cri-probe-interval", o.CRIProbeInterval,
		"How often the container runtime is asked for its version to back /readyz and kruise_daemon_cri_up.")
	fs.DurationVar(&o.CRIProbeTimeout, "cri-probe-timeout", o.CRIProbeTimeout,
		"Timeout of one CRI Version call, when discovering the runtime and when probing it.")
	fs.DurationVar(&o.RuntimeRequestTimeout, "runtime-request-timeout", o.RuntimeRequestTimeout,
		"Timeout of each CRI call that has no deadline of its own (ListContainers, ContainerStatus, ImageStatus, RemoveImage, ExecSync without a timeout), "+
			"as the kubelet's flag of that name: a runtime that takes a call and never answers holds the CRR or pull waiting on it this long.")
	fs.StringVar(&o.Addr, "addr", o.Addr,
		"Listen address of /healthz, /readyz and /metrics: host:port, or unix:///abs/path for a unix socket (mode 0660, a stale one is replaced, removed on exit).")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"Namespace of the node heartbeat Lease (kruise-daemon-<node>). Defaults to $"+PodNamespaceEnv+", else "+DefaultNamespace+".")
	fs.IntVar(&o.CRRWorkers, "crr-workers", o.CRRWorkers,
		"How many pods' ContainerRecreateRequests are executed in parallel (one request at a time per pod).")
	fs.IntVar(&o.MaxConcurrentPulls, "max-concurrent-pulls", o.MaxConcurrentPulls,
		"How many images of this node's NodeImage are pulled at once; the others wait (status Waiting).")
	fs.StringVar(&o.CredentialProviderConfig, "credential-provider-config", o.CredentialProviderConfig,
		"Path of a kubelet CredentialProviderConfig (kubelet.config.k8s.io/v1) naming exec credential-provider plugins for image pre-pulls, "+
			"as the kubelet's --image-credential-provider-config. Empty: only the ImagePullJobs' pull secrets are used.")
	fs.StringVar(&o.CredentialProviderBinDir, "credential-provider-bin-dir", o.CredentialProviderBinDir,
		"Directory of the credential-provider plugin binaries, as the kubelet's --image-credential-provider-bin-dir.")
	fs.DurationVar(&o.CredentialProviderTimeout, "credential-provider-timeout", o.CredentialProviderTimeout,
		"How long one credential-provider plugin call may take before it is killed.")
	fs.DurationVar(&o.CredentialProviderReloadPeriod, "credential-provider-config-reload-period", o.CredentialProviderReloadPeriod,
		"How often --credential-provider-config is read again: a changed config (a ConfigMap volume the kubelet updated, say) is checked and used "+
			"without a restart; an invalid one is reported (log and a Warning Event on the Node) and the previous one kept. 0: never.")
	// OpenKruise's kruise-daemon names for the same settings, so existing manifests keep working.
	fs.IntVar(&o.MaxConcurrentPulls, "max-workers-for-pull-image", o.MaxConcurrentPulls, "")
	fs.StringVar(&o.CredentialProviderConfig, "plugin-config-file", o.CredentialProviderConfig, "")
	fs.StringVar(&o.CredentialProviderBinDir, "plugin-bin-dir", o.CredentialProviderBinDir, "")
	for _, f := range [][2]string{{"max-workers-for-pull-image", "max-concurrent-pulls"},
		{"plugin-config-file", "credential-provider-config"}, {"plugin-bin-dir", "credential-provider-bin-dir"}} {
		_ = fs.MarkDeprecated(f[0], "use --"+f[1])
	}
}

// Validate checks the options and says which flag to fix. A valid
// --socket-file becomes RuntimeEndpoint, which the runtime discovery uses.
func (o *Options) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, fmt.Errorf("node name is empty: set $%s (downward API spec.nodeName) or --node-name", NodeNameEnv))
	}
	if err := o.Kube.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.RuntimeEndpoint != "" {
		if _, err := cri.ParseEndpoint(o.RuntimeEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("--runtime-endpoint: %w", err))
		}
	}
	if o.RuntimeEndpoint == "" && o.HostRunDir == "" {
		errs = append(errs, errors.New("--host-run-dir must not be empty when --runtime-endpoint is not set"))
	}
	if err := o.resolveSocketFile(); err != nil {
		errs = append(errs, err)
	}
	if o.RuntimeWait < 0 {
		errs = append(errs, fmt.Errorf("--runtime-wait must not be negative, got %s", o.RuntimeWait))
	}
	if o.CRIProbeInterval <= 0 {
		errs = append(errs, fmt.Errorf("--cri-probe-interval must be positive, got %s", o.CRIProbeInterval))
	}
	if o.CRIProbeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--cri-probe-timeout must be positive, got %s", o.CRIProbeTimeout))
	}
	if o.RuntimeRequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--runtime-request-timeout must be positive, got %s", o.RuntimeRequestTimeout))
	}
	if o.Addr == "" {
		errs = append(errs, errors.New("--addr must not be empty"))
	}
	if o.CRRWorkers < 1 {
		errs = append(errs, fmt.Errorf("--crr-workers must be at least 1, got %d", o.CRRWorkers))
	}
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if o.MaxConcurrentPulls < 1 {
		// OpenKruise's -1 ("unlimited") is refused: a node pulling without
		// bound saturates its disk and network.
		errs = append(errs, fmt.Errorf("--max-concurrent-pulls must be at least 1, got %d", o.MaxConcurrentPulls))
	}
	if (o.CredentialProviderConfig == "") != (o.CredentialProviderBinDir == "") {
		errs = append(errs, errors.New("--credential-provider-config and --credential-provider-bin-dir must be set together"))
	}
	if o.CredentialProviderTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--credential-provider-timeout must be positive, got %s", o.CredentialProviderTimeout))
	}
	if o.CredentialProviderReloadPeriod < 0 {
		errs = append(errs, fmt.Errorf("--credential-provider-config-reload-period must not be negative, got %s", o.CredentialProviderReloadPeriod))
	}
	return errors.Join(errs...)
}

// resolveSocketFile checks SocketFile and, when it is set and valid, sets
// RuntimeEndpoint to unix://<HostRunDir>/<SocketFile>.
func (o *Options) resolveSocketFile() error {
	if o.SocketFile == "" {
		return nil
	}
	if o.RuntimeEndpoint != "" && o.RuntimeEndpoint != o.socketEndpoint {
		return errors.New("--socket-file and --runtime-endpoint both name the CRI socket: set only one")
	}
	if filepath.IsAbs(o.SocketFile) {
		return fmt.Errorf("--socket-file %q must be relative to --host-run-dir (%s); use --runtime-endpoint for an absolute path", o.SocketFile, o.HostRunDir)
	}
	for _, elem := range strings.Split(filepath.ToSlash(o.SocketFile), "/") {
		if elem == ".." {
			return fmt.Errorf("--socket-file %q must stay under --host-run-dir: \"..\" is not allowed", o.SocketFile)
		}
	}
	if o.HostRunDir == "" {
		return errors.New("--host-run-dir must not be empty when --socket-file is set")
	}
	// Escaped, so that ParseEndpoint gives back this very path: "%2e%2e",
	// "?" or "#" in the file name must not move the socket elsewhere.
	endpoint := (&url.URL{Scheme: "unix", Path: filepath.Join(o.HostRunDir, o.SocketFile)}).String()
	if _, err := cri.ParseEndpoint(endpoint); err != nil {
		return fmt.Errorf("--host-run-dir and --socket-file: %w", err)
	}
	o.RuntimeEndpoint, o.socketEndpoint = endpoint, endpoint
	return nil
}
