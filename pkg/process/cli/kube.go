// Package cli holds what both kruise binaries share on the command line: the
// Kubernetes client settings and the command skeleton (logging, version,
// signals, the probe subcommand). It builds a rest.Config, never a
// clientset: kruise-daemon imports it and must not link client-go's
// all-groups clientset (see pkg/daemon/kube); pkg/controller builds its
// clientset on the rest.Config itself.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodekruise/kruise/pkg/process/version"
)

// KubeOptions configures the Kubernetes API client.
type KubeOptions struct {
	// Kubeconfig is a kubeconfig file; empty means $KUBECONFIG, then the
	// in-cluster service account.
	Kubeconfig string
	// QPS and Burst bound the client's request rate.
	QPS   float32
	Burst int
}

// NewKubeOptions returns the defaults.
func NewKubeOptions() KubeOptions {
	return KubeOptions{QPS: 20, Burst: 40}
}

// AddFlags registers the client flags.
func (o *KubeOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Path to a kubeconfig file. Empty: $KUBECONFIG if set, otherwise the in-cluster service account.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Queries per second to the Kubernetes API server.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of queries to the Kubernetes API server.")
}

// Validate checks the flag values.
func (o *KubeOptions) Validate() error {
	if o.QPS <= 0 {
		return fmt.Errorf("--kube-api-qps must be positive, got %v", o.QPS)
	}
	if o.Burst < 1 {
		return fmt.Errorf("--kube-api-burst must be at least 1, got %d", o.Burst)
	}
	return nil
}

// RESTConfig builds the client configuration; component (e.g.
// "kruise-daemon") goes into the user agent.
func (o *KubeOptions) RESTConfig(component string) (*rest.Config, error) {
	path := o.Kubeconfig
	if path == "" {
		path = os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	}
	var (
		cfg *rest.Config
		err error
	)
	if path != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			if errors.Is(err, rest.ErrNotInCluster) {
				return nil, fmt.Errorf("no Kubernetes API configuration: not running in a pod and neither --kubeconfig nor $KUBECONFIG is set: %w", err)
			}
			return nil, fmt.Errorf("loading in-cluster Kubernetes configuration: %w", err)
		}
	}
	cfg.QPS = o.QPS
	cfg.Burst = o.Burst
	cfg.UserAgent = fmt.Sprintf("%s/%s", component, version.Get().GitVersion)
	return cfg, nil
}
