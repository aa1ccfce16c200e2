//go:build bench

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// startOpenKruiseForWorkloads starts OpenKruise's kruise-manager for its workloads (CloneSet,
// Advanced StatefulSet, Advanced DaemonSet), and the caller waits for the controllers it
// measures (waitController). Compared with startOpenKruise (the launch-priority phase), it
// changes nothing of kruise's:
//
//   - its caches see the whole cluster (--namespace breaks its CloneSet controller as it breaks
//     its pod webhook: "informer *cache.multiNamespaceInformer from cache is not a
//     SharedIndexInformer"), so it would act on every workload of those kinds: it is started
//     only when the cluster has none (checked), and the benchmark creates none but OpenKruise's
//     while it runs;
//   - kruise-controller keeps running: OpenKruise reads the workloads in the version it knows,
//     which the API server converts from the stored v1beta1 through kruise's conversion webhook.
//     The caller fences kruise's controllers (fenceKruise) for as long as a workload exists in
//     OpenKruise's namespace, so only one controller acts on it;
//   - no pod webhook: the workloads need none (the CloneSet and DaemonSet controllers give their
//     pods the InPlaceUpdateReady readiness gate themselves, an Advanced StatefulSet's template
//     carries it), so the API server is not told about it and no SidecarSet CRD is installed;
//   - certificates and network as for the launch-priority phase: it checks, and does not
//     change, kruise's webhook configurations and CRD conversion blocks (EnableExternalCerts).
//
// Everything it creates is undone by stop, which the caller must call (also on failure).
func (e *env) startOpenKruiseForWorkloads(ctx context.Context, t *testing.T, b openKruiseBuild) (*openKruise, error) {
	ok, err := e.newOpenKruise(b)
	if err != nil {
		return ok, err
	}
	steps := []startStep{
		{"no kruise workload in the cluster", e.requireNoWorkloads},
		{"namespace", ok.createNamespace},
		{"certificates", ok.writeSecret},
		{"network namespace", ok.startNetns},
		{"kruise-manager", ok.startManager},
	}
	return ok, runSteps(ctx, t, "OpenKruise", steps)
}

// waitController waits until kruise-manager has started the workers of its controller name
// (cloneset-controller, statefulset-controller, daemonset-controller): it sets its controllers
// up one by one after its webhook is ready, and looks up kinds this cluster does not serve on
// the way (about 16 s each).
func (ok *openKruise) waitController(ctx context.Context, name string) error {
	logPath := filepath.Join(ok.dir, "kruise-manager.log")
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if done, err := ok.proc.Exited(); done {
			return false, fmt.Errorf("kruise-manager exited: %v", err)
		}
		raw, err := os.ReadFile(logPath)
		if err != nil {
			return false, err
		}
		return strings.Contains(string(raw), `"Starting workers" "controller"="`+name+`"`), nil
	})
	if err != nil {
		return fmt.Errorf("OpenKruise's %s not started (log %s): %w", name, logPath, err)
	}
	return nil
}

// requireNoWorkloads fails when any CloneSet, Advanced StatefulSet or Advanced DaemonSet
// exists: OpenKruise's controllers would act on it.
func (e *env) requireNoWorkloads(ctx context.Context) error {
	var names []string
	css, err := e.kruise.AppsV1beta1().CloneSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, x := range css.Items {
		names = append(names, "CloneSet "+x.Namespace+"/"+x.Name)
	}
	stss, err := e.kruise.AppsV1beta1().StatefulSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, x := range stss.Items {
		names = append(names, "StatefulSet "+x.Namespace+"/"+x.Name)
	}
	dss, err := e.kruise.AppsV1beta1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, x := range dss.Items {
		names = append(names, "DaemonSet "+x.Namespace+"/"+x.Name)
	}
	if len(names) > 0 {
		return fmt.Errorf("OpenKruise's controllers would act on %v: delete them, or leave OpenKruise's phase out (BENCH_CLONESET_OPENKRUISE=0, BENCH_WORKLOAD_OPENKRUISE=0)", names)
	}
	return nil
}

// openKruisePhase runs run with OpenKruise's kruise-manager up (the controllers named waited
// for) and kruise-controller fenced, on the workloads workloads makes in OpenKruise's namespace
// (run creates them). However run or the test ends, the phase ends the same way: those
// workloads and their pods go before OpenKruise stops and the fence is lifted, so that kruise's
// controller never finds anything of OpenKruise's.
func (e *env) openKruisePhase(ctx context.Context, t *testing.T, build openKruiseBuild, controllers []string,
	workloads func(ns string) []workload, run func(ns string, ws []workload)) {
	t.Helper()
	start := time.Now()
	ok, err := e.startOpenKruiseForWorkloads(ctx, t, build)
	t.Cleanup(func() {
		if ok == nil {
			return
		}
		if err := ok.stop(context.Background()); err != nil {
			t.Errorf("stopping OpenKruise: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range controllers {
		if err := ok.waitController(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	ws := workloads(ok.ns)
	fence, err := e.fenceKruise(ctx)
	end := func(ctx context.Context) error {
		var errs []error
		for _, w := range ws {
			if err := w.remove(ctx); err != nil {
				errs = append(errs, err)
			} else if err := e.waitPodsGone(ctx, ok.ns, w.name()); err != nil {
				errs = append(errs, err)
			}
		}
		errs = append(errs, ok.stop(ctx))
		ok = nil
		if fence != nil {
			if err := fence.release(ctx); err != nil {
				errs = append(errs, fmt.Errorf("releasing kruise-controller's Lease: %w", err))
			}
			fence = nil
		}
		return errors.Join(errs...)
	}
	t.Cleanup(func() {
		if ok == nil {
			return
		}
		if err := end(context.Background()); err != nil {
			t.Errorf("ending the OpenKruise phase: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("OpenKruise's %v started, kruise-controller fenced (no replica leads): %s", controllers, time.Since(start).Round(time.Second))
	run(ok.ns, ws)
	start = time.Now()
	if err := end(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("OpenKruise stopped, kruise-controller leading again: %s", time.Since(start).Round(time.Second))
}
