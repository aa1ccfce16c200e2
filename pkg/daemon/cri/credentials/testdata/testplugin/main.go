// Command testplugin is a kubelet exec credential-provider plugin for the
// tests of package credentials. Its behaviour is chosen by flags (the
// provider's args in the test's config):
//
//	-mode ok|fail|hang|garbage|wrongapi
//	-count FILE          append one line to FILE per invocation
//	-release FIFO        before answering, block until a byte can be read from FIFO
//	-cache-key-type T    the response's cacheKeyType
//	-cache-duration D    the response's cacheDuration ("" = absent)
//	-auth-key K          the response's auth key (default: the request's image)
//
// In mode ok the credential is username "user:" + the request's image and
// password $TESTPLUGIN_PASSWORD.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

type request struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Image      string `json:"image"`
}

func main() {
	mode := flag.String("mode", "ok", "behaviour")
	count := flag.String("count", "", "invocation count file")
	release := flag.String("release", "", "FIFO to read before answering")
	cacheKeyType := flag.String("cache-key-type", "Image", "cacheKeyType")
	cacheDuration := flag.String("cache-duration", "", "cacheDuration")
	authKey := flag.String("auth-key", "", "auth key")
	flag.Parse()

	if *count != "" {
		f, err := os.OpenFile(*count, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fatal(err)
		}
		if _, err := f.WriteString("x\n"); err != nil {
			fatal(err)
		}
		if err := f.Close(); err != nil {
			fatal(err)
		}
	}

	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fatal(err)
	}
	var req request
	if err := json.Unmarshal(in, &req); err != nil {
		fatal(err)
	}
	if req.APIVersion != "credentialprovider.kubelet.k8s.io/v1" || req.Kind != "CredentialProviderRequest" {
		fatal(fmt.Errorf("bad request type %s %s", req.APIVersion, req.Kind))
	}

	if *release != "" {
		f, err := os.Open(*release) // blocks until the test opens it for writing
		if err != nil {
			fatal(err)
		}
		if _, err := f.Read(make([]byte, 1)); err != nil {
			fatal(err)
		}
		_ = f.Close()
	}

	switch *mode {
	case "fail":
		fmt.Fprintln(os.Stderr, "  registry said no  ")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	case "garbage":
		fmt.Print("this is not json")
		return
	}

	apiVersion := "credentialprovider.kubelet.k8s.io/v1"
	if *mode == "wrongapi" {
		apiVersion = "credentialprovider.kubelet.k8s.io/v1alpha1"
	}
	key := *authKey
	if key == "" {
		key = req.Image
	}
	resp := map[string]any{
		"apiVersion":   apiVersion,
		"kind":         "CredentialProviderResponse",
		"cacheKeyType": *cacheKeyType,
		"auth": map[string]any{
			key: map[string]string{"username": "user:" + req.Image, "password": os.Getenv("TESTPLUGIN_PASSWORD")},
		},
	}
	if *cacheDuration != "" {
		resp["cacheDuration"] = *cacheDuration
	}
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "testplugin:", err)
	os.Exit(1)
}
