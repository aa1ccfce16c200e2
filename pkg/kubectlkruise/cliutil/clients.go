package cliutil

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// Clientsets are the Kubernetes and kruise clientsets for the cluster the
// Factory's kubeconfig and flags point at.
func Clientsets(f cmdutil.Factory) (kubernetes.Interface, versioned.Interface, error) {
	config, err := restConfig(f)
	if err != nil {
		return nil, nil, err
	}
	kube, err := newKube(config)
	if err != nil {
		return nil, nil, err
	}
	kruise, err := newKruise(config)
	if err != nil {
		return nil, nil, err
	}
	return kube, kruise, nil
}

// KubeClientset is the Kubernetes clientset alone, for commands (and
// completions) that read no kruise object.
func KubeClientset(f cmdutil.Factory) (kubernetes.Interface, error) {
	config, err := restConfig(f)
	if err != nil {
		return nil, err
	}
	return newKube(config)
}

// KruiseClientset is the kruise clientset alone, for commands that touch
// only kruise objects.
func KruiseClientset(f cmdutil.Factory) (versioned.Interface, error) {
	config, err := restConfig(f)
	if err != nil {
		return nil, err
	}
	return newKruise(config)
}

func restConfig(f cmdutil.Factory) (*rest.Config, error) {
	config, err := f.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return config, nil
}

func newKube(config *rest.Config) (kubernetes.Interface, error) {
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("building a Kubernetes client: %w", err)
	}
	return kube, nil
}

func newKruise(config *rest.Config) (versioned.Interface, error) {
	kruise, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("building a kruise client: %w", err)
	}
	return kruise, nil
}
