//go:build !unix

package credentials

import "os/exec"

// ownProcessGroup leaves cmd as it is: without process groups, the end of
// its context kills the plugin alone (exec's default).
func ownProcessGroup(*exec.Cmd) {}
