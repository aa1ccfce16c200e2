package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// kruise-controller's image has no time zone files: an AdvancedCronJob's timeZone (and the
// webhook's check of it) work only with the database built into the binary.
func TestTimeZoneDatabaseBuiltIn(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if !slices.Contains(strings.Fields(string(out)), "time/tzdata") {
		t.Fatal("kruise-controller does not link time/tzdata (pkg/workload/cronjobs imports it)")
	}
}
