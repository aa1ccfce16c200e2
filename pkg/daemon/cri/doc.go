// Package cri is kruise's boundary to the node's container runtime
// (containerd, CRI-O, cri-dockerd) over the CRI v1 gRPC API.
//
// Code outside this package depends on the small interfaces declared here
// (Runtime), never on gRPC or the generated CRI client, so it can be tested
// with in-memory fakes. Tests that need the wire protocol use the fake CRI
// server in package critest.
package cri
