//go:build e2e

// Package helm holds e2e tests that change the Helm release of kruise on the local cluster
// (helm upgrade with other values) and put it back. They run after the main suite against the
// install `make e2e-helm` made, alone, before the uninstall check (test/e2e/uninstall).
//
//	externalcerts_test.go  a switch to cert-manager's certificates (externalCerts) and back
package helm
