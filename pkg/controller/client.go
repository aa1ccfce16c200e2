package controller

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekruise/kruise/pkg/process/cli"
)

// newClient builds the client configuration from the shared client flags
// and the all-groups clientset on it. Only kruise-controller uses that
// clientset: kruise-daemon builds narrow clients (pkg/daemon/kube) and must
// not link it.
func newClient(o *cli.KubeOptions, component string) (*rest.Config, kubernetes.Interface, error) {
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
