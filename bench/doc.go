// Package bench holds benchmarks that need the local cluster. They are behind the build tag
// "bench", so `go test ./...` never runs them; `make bench` does (see BENCHMARKS.md).
package bench
