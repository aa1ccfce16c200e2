// Command credplugin is the exec credential provider the local cluster's kruise-daemon runs in
// the e2e tests (hack/deploy.sh builds it into the daemon's plugin directory and writes the
// CredentialProviderConfig). It answers a kubelet CredentialProviderRequest on stdin with the
// username and password from its environment, for the image's registry and repository path
// prefix given by CREDPLUGIN_MATCH, and appends one line per call to CREDPLUGIN_LOG (when set)
// so tests can see that it ran. It never prints the password anywhere but in the response.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

const apiVersion = "credentialprovider.kubelet.k8s.io/v1"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "credplugin:", err)
		os.Exit(1)
	}
}

func run() error {
	var req credentialproviderv1.CredentialProviderRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	if req.APIVersion != apiVersion || req.Kind != "CredentialProviderRequest" {
		return fmt.Errorf("unexpected request %s/%s", req.APIVersion, req.Kind)
	}
	match, user, password := os.Getenv("CREDPLUGIN_MATCH"), os.Getenv("CREDPLUGIN_USER"), os.Getenv("CREDPLUGIN_PASSWORD")
	if match == "" || user == "" || password == "" {
		return fmt.Errorf("CREDPLUGIN_MATCH, CREDPLUGIN_USER and CREDPLUGIN_PASSWORD must be set")
	}
	if path := os.Getenv("CREDPLUGIN_LOG"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), req.Image)
			_ = f.Close()
		}
	}
	resp := credentialproviderv1.CredentialProviderResponse{
		CacheKeyType:  credentialproviderv1.RegistryPluginCacheKeyType,
		CacheDuration: nil,
		Auth: map[string]credentialproviderv1.AuthConfig{
			match: {Username: user, Password: password},
		},
	}
	resp.APIVersion, resp.Kind = apiVersion, "CredentialProviderResponse"
	return json.NewEncoder(os.Stdout).Encode(resp)
}
