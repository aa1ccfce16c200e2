package main

import (
	"testing"

	"github.com/nodekruise/kruise/test/unit/deptest"
)

// unwanted are packages kruise-daemon must not link. Each costs resident
// memory on every node for code the daemon never runs (BENCHMARKS.md,
// "Daemon footprint"): package init alone registers every API group,
// OpenAPI models or protobuf descriptors.
var unwanted = map[string]string{
	"k8s.io/client-go/kubernetes":                       "the all-groups clientset and scheme; use pkg/daemon/kube",
	"k8s.io/client-go/gentype":                          "its package holds the fake clients (client-go/testing); use pkg/daemon/kube",
	"k8s.io/client-go/testing":                          "test code",
	"k8s.io/client-go/tools/record":                     "strategic merge patch and OpenAPI; use pkg/daemon/recorder",
	"k8s.io/client-go/tools/events":                     "strategic merge patch and OpenAPI; use pkg/daemon/recorder",
	"k8s.io/apimachinery/pkg/util/strategicpatch":       "OpenAPI models, gnostic, YAML v3",
	"k8s.io/kube-openapi":                               "OpenAPI models",
	"github.com/nodekruise/kruise/pkg/client/clientset": "the generated clients import gentype; use pkg/daemon/kube",
	"golang.org/x/net/trace":                            "gRPC tracing, off unless built without the grpcnotrace tag",
}

// TestNoUnwantedDependencies lists kruise-daemon's dependencies as the
// release build does (tag grpcnotrace) and fails on any of unwanted.
func TestNoUnwantedDependencies(t *testing.T) {
	deptest.Forbid(t, "kruise-daemon", []string{"grpcnotrace"}, unwanted)
}
