// Package options holds what both kruise binaries share on the command line:
// the command skeleton and Kubernetes client settings of package cli, plus
// the client-go clientset kruise-controller uses. kruise-daemon imports cli
// directly, so that it does not link the all-groups clientset (see
// pkg/daemon/kube).
package options

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekruise/kruise/pkg/options/cli"
)

// Component describes one binary for NewCommand.
type Component = cli.Component

// NewCommand returns the cobra command of a component (see cli.NewCommand).
func NewCommand(c Component) *cobra.Command { return cli.NewCommand(c) }

// Main runs cmd and returns the process exit code (see cli.Main).
func Main(cmd *cobra.Command) int { return cli.Main(cmd) }

// KubeOptions configures the Kubernetes API client.
type KubeOptions struct{ cli.KubeOptions }

// NewKubeOptions returns the defaults.
func NewKubeOptions() KubeOptions { return KubeOptions{cli.NewKubeOptions()} }

// Client builds a clientset from the options.
func (o *KubeOptions) Client(component string) (*rest.Config, kubernetes.Interface, error) {
	cfg, err := o.RESTConfig(component)
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating Kubernetes client: %w", err)
	}
	return cfg, client, nil
}
