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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// startOpenKruiseForCloneSets starts OpenKruise's kruise-manager for CloneSets, and the caller
// waits for its CloneSet controller (waitCloneSetController). Compared with startOpenKruise (the
// launch-priority phase), it changes nothing of kruise's:
//
//   - its caches see the whole cluster (--namespace breaks its CloneSet controller as it breaks
//     its pod webhook: "informer *cache.multiNamespaceInformer from cache is not a
//     SharedIndexInformer"), so it would act on every CloneSet: it is started only when the
//     cluster has none (checked), and the benchmark creates none but OpenKruise's while it runs;
//   - kruise-controller keeps running: OpenKruise reads CloneSets as v1alpha1, which the API
//     server converts from the stored v1beta1 through kruise's conversion webhook. The caller
//     fences kruise's controllers (fenceKruise) for as long as a CloneSet exists in OpenKruise's
//     namespace, so only one controller acts on it;
//   - no pod webhook: a CloneSet needs none (its controller gives its pods the
//     InPlaceUpdateReady readiness gate itself), so the API server is not told about it and no
//     SidecarSet CRD is installed;
//   - certificates and network as for the launch-priority phase: it checks, and does not
//     change, kruise's webhook configurations and CRD conversion blocks (EnableExternalCerts).
//
// Everything it creates is undone by stop, which the caller must call (also on failure).
func (e *env) startOpenKruiseForCloneSets(ctx context.Context, t *testing.T, b openKruiseBuild) (*openKruise, error) {
	ok, err := e.newOpenKruise(b)
	if err != nil {
		return ok, err
	}
	steps := []startStep{
		{"no CloneSet in the cluster", e.requireNoCloneSets},
		{"namespace", ok.createNamespace},
		{"certificates", ok.writeSecret},
		{"network namespace", ok.startNetns},
		{"kruise-manager", ok.startManager},
	}
	return ok, runSteps(ctx, t, "OpenKruise", steps)
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

// requireNoCloneSets fails when any CloneSet exists: OpenKruise's controller would act on it.
func (e *env) requireNoCloneSets(ctx context.Context) error {
	l, err := e.kruise.AppsV1alpha1().CloneSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var names []string
	for _, cs := range l.Items {
		names = append(names, cs.Namespace+"/"+cs.Name)
	}
	if len(names) > 0 {
		return fmt.Errorf("OpenKruise's CloneSet controller would act on %v: delete them or run with BENCH_CLONESET_OPENKRUISE=0", names)
	}
	return nil
}
