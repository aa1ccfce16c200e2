//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// startOpenKruiseForCloneSets starts OpenKruise's kruise-manager for the CloneSets of its own
// namespace, and waits until its CloneSet controller runs. Compared with startOpenKruise (the
// launch-priority phase), it changes nothing of kruise's:
//
//   - --namespace confines its caches, so it acts on nothing outside its namespace; its pod
//     webhook would then fail (see startOpenKruise) but is not needed for CloneSets (the
//     controller itself gives its pods the InPlaceUpdateReady readiness gate), so the API
//     server is not told about it and kruise's SidecarSet-less cluster needs no SidecarSet CRD.
//   - kruise-controller keeps running: OpenKruise reads CloneSets as v1alpha1, which the API
//     server converts from the stored v1beta1 through kruise's conversion webhook. The caller
//     fences kruise's controllers (fenceKruise) for as long as a CloneSet exists in OpenKruise's
//     namespace, so only one controller acts on it.
//   - certificates and network as for the launch-priority phase: it checks, and does not
//     change, kruise's webhook configurations and CRD conversion blocks (EnableExternalCerts).
//
// Everything it creates is undone by stop, which the caller must call (also on failure).
func (e *env) startOpenKruiseForCloneSets(ctx context.Context, t *testing.T, b openKruiseBuild) (*openKruise, error) {
	ok, err := e.newOpenKruise(b)
	if err != nil {
		return ok, err
	}
	ok.args = []string{"--namespace=" + ok.ns}
	steps := []struct {
		name string
		f    func(context.Context) error
	}{
		{"namespace", ok.createNamespace},
		{"certificates", ok.writeSecret},
		{"network namespace", ok.startNetns},
		{"kruise-manager", ok.startManager},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.f(ctx); err != nil {
			return ok, fmt.Errorf("OpenKruise, %s: %w", s.name, err)
		}
		t.Logf("OpenKruise: %s (%s)", s.name, time.Since(start).Round(time.Millisecond))
	}
	return ok, nil
}

// waitCloneSetController waits until kruise-manager has started its CloneSet controller's
// workers: it sets its controllers up one by one after its webhook is ready, and looks up two
// kinds this cluster does not serve before CloneSet (about 16 s each).
func (ok *openKruise) waitCloneSetController(ctx context.Context) error {
	logPath := filepath.Join(ok.dir, "kruise-manager.log")
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if done, err := ok.proc.exited(); done {
			return false, fmt.Errorf("kruise-manager exited: %v", err)
		}
		raw, err := os.ReadFile(logPath)
		if err != nil {
			return false, err
		}
		return strings.Contains(string(raw), `"Starting workers" "controller"="cloneset-controller"`), nil
	})
	if err != nil {
		return fmt.Errorf("OpenKruise's cloneset-controller not started (log %s): %w", logPath, err)
	}
	return nil
}
