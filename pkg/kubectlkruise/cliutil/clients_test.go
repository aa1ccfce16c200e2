package cliutil

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// configFactory is a Factory whose only working method is ToRESTConfig.
type configFactory struct {
	cmdutil.Factory
	config *rest.Config
	err    error
}

func (f configFactory) ToRESTConfig() (*rest.Config, error) { return f.config, f.err }

func TestClientsets(t *testing.T) {
	tests := []struct {
		name    string
		factory configFactory
		wantErr string
	}{
		{name: "built from the config", factory: configFactory{config: &rest.Config{Host: "https://127.0.0.1:6443"}}},
		{name: "kubeconfig unreadable", factory: configFactory{err: errors.New("no such file")}, wantErr: "reading the kubeconfig: no such file"},
		{name: "config unusable", factory: configFactory{config: &rest.Config{Host: "https://127.0.0.1:6443", QPS: 1, Burst: 0}}, wantErr: "building a Kubernetes client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube, kruise, err := Clientsets(tt.factory)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || kube == nil || kruise == nil {
				t.Fatalf("Clientsets = %v, %v, %v; want both clientsets", kube, kruise, err)
			}
			if _, err := KubeClientset(tt.factory); err != nil {
				t.Errorf("KubeClientset: %v", err)
			}
			if _, err := KruiseClientset(tt.factory); err != nil {
				t.Errorf("KruiseClientset: %v", err)
			}
		})
	}
}
