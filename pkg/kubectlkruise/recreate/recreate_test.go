package recreate

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/test/unit/golden"
)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns"},
		Spec: corev1.PodSpec{
			NodeName:       "node-a",
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers:     []corev1.Container{{Name: "app"}, {Name: "sidecar"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// testOptions are options on fake clients, printing as output asks.
func testOptions(t *testing.T, output string, dryRun cmdutil.DryRunStrategy, objects ...*corev1.Pod) (*Options, *bytes.Buffer, *kruisefake.Clientset) {
	t.Helper()
	out := &bytes.Buffer{}
	o := NewOptions(genericiooptions.IOStreams{Out: out, ErrOut: out})
	o.Namespace, o.Pod, o.DryRun = "ns", "web-0", dryRun
	o.suffix = func() string { return "x7k2p" }
	*o.PrintFlags.OutputFormat = output
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, dryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		t.Fatal(err)
	}
	o.printObject = printer.PrintObj
	kube := kubefake.NewSimpleClientset()
	for _, p := range objects {
		if err := kube.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	kruise := kruisefake.NewSimpleClientset()
	o.Kube, o.Kruise = kube, kruise
	return o, out, kruise
}

func TestCreate(t *testing.T) {
	cases := []struct {
		name    string
		output  string
		dryRun  cmdutil.DryRunStrategy
		mutate  func(*Options)
		created bool
	}{
		{name: "create", created: true},
		{name: "create-name-output", output: "name", created: true},
		{name: "dry-run-client-yaml", output: "yaml", dryRun: cmdutil.DryRunClient, mutate: func(o *Options) {
			o.Containers = []string{"sidecar", "app"}
			o.Force, o.Ordered = true, true
			o.TerminationGracePeriod, o.UnreadyGracePeriod, o.ActiveDeadline = 30, 5, 120
		}},
		{name: "dry-run-server", dryRun: cmdutil.DryRunServer, created: true},
		{name: "named", mutate: func(o *Options) { o.Name = "restart-app" }, created: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, out, kruise := testOptions(t, tc.output, tc.dryRun, testPod())
			o.Containers = []string{"app"}
			if tc.mutate != nil {
				tc.mutate(o)
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "create-"+tc.name, out.String())
			var creates []k8stesting.CreateActionImpl
			for _, a := range kruise.Actions() {
				if c, ok := a.(k8stesting.CreateActionImpl); ok {
					creates = append(creates, c)
				}
			}
			if got := len(creates) == 1; got != tc.created {
				t.Fatalf("created = %v (%d create calls), want %v", got, len(creates), tc.created)
			}
			if !tc.created {
				return
			}
			wantDryRun := tc.dryRun == cmdutil.DryRunServer
			if got := len(creates[0].CreateOptions.DryRun) > 0; got != wantDryRun {
				t.Errorf("server dry run = %v, want %v", got, wantDryRun)
			}
			crr := creates[0].GetObject().(*appsv1beta1.ContainerRecreateRequest)
			if crr.Spec.PodName != "web-0" || len(crr.Spec.Containers) != 1 || crr.Spec.Containers[0].Name != "app" {
				t.Errorf("spec = %+v, want pod web-0 and container app", crr.Spec)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	finished := testPod()
	finished.Status.Phase = corev1.PodSucceeded
	cases := []struct {
		name       string
		pods       []*corev1.Pod
		containers []string
		wait       bool
		dryRun     cmdutil.DryRunStrategy
		want       string
	}{
		{name: "no container", pods: []*corev1.Pod{testPod()}, want: "name the containers of pod web-0"},
		{name: "twice", pods: []*corev1.Pod{testPod()}, containers: []string{"app", "app"}, want: `"app" is given twice`},
		{name: "wait with dry run", pods: []*corev1.Pod{testPod()}, containers: []string{"app"}, wait: true, dryRun: cmdutil.DryRunClient, want: "--wait cannot be used with --dry-run"},
		{name: "unknown container", pods: []*corev1.Pod{testPod()}, containers: []string{"db"}, want: `pod ns/web-0 has no container "db": its containers are app, sidecar`},
		{name: "init container", pods: []*corev1.Pod{testPod()}, containers: []string{"init"}, want: `"init" of pod ns/web-0 is an init container`},
		{name: "no pod", containers: []string{"app"}, want: "pod ns/web-0 not found: check its name and the namespace (-n)"},
		{name: "finished pod", pods: []*corev1.Pod{finished}, containers: []string{"app"}, want: "has finished (Succeeded)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _, _ := testOptions(t, "", tc.dryRun, tc.pods...)
			o.Containers, o.Wait = tc.containers, tc.wait
			err := o.Validate()
			if err == nil {
				err = o.Run(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestPodName(t *testing.T) {
	for args, want := range map[string]string{"pod/web-0": "web-0", "po/web-0": "web-0", "web-0": "web-0", "pods web-0": "web-0", "deploy/web": "", "pod/": ""} {
		got, err := podName(strings.Fields(args))
		if got != want || (err == nil) != (want != "") {
			t.Errorf("podName(%q) = %q, %v; want %q", args, got, err, want)
		}
	}
}

// states is a request status with the given container phases and messages
// ("name=Phase" or "name=Phase:message").
func states(crr *appsv1beta1.ContainerRecreateRequest, phase appsv1beta1.ContainerRecreateRequestPhase, rv string, containers ...string) *appsv1beta1.ContainerRecreateRequest {
	c := crr.DeepCopy()
	c.ResourceVersion = rv
	c.Status.Phase = phase
	c.Status.ContainerRecreateStates = nil
	for _, s := range containers {
		name, rest, _ := strings.Cut(s, "=")
		p, msg, _ := strings.Cut(rest, ":")
		c.Status.ContainerRecreateStates = append(c.Status.ContainerRecreateStates, appsv1beta1.ContainerRecreateRequestContainerRecreateState{
			Name: name, Phase: appsv1beta1.ContainerRecreateRequestPhase(p), Message: msg,
		})
	}
	return c
}

func TestWait(t *testing.T) {
	base := &appsv1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0-x7k2p", Namespace: "ns"},
		Spec:       appsv1beta1.ContainerRecreateRequestSpec{PodName: "web-0", Containers: []appsv1beta1.ContainerRecreateRequestContainer{{Name: "sidecar"}, {Name: "app"}}},
	}
	waiting := base.DeepCopy()
	waiting.ResourceVersion = "2"
	waiting.Status.Conditions = []metav1.Condition{{Type: "Admitted", Status: metav1.ConditionFalse, Reason: "WaitingForPod", Message: "pod is not running yet"}}
	cases := []struct {
		name    string
		events  []*appsv1beta1.ContainerRecreateRequest
		closeAt int // close the watch after this many events; 0 keeps it open
		reread  *appsv1beta1.ContainerRecreateRequest
		want    string
	}{
		{name: "succeeded", events: []*appsv1beta1.ContainerRecreateRequest{
			waiting,
			states(base, "Recreating", "3", "sidecar=Recreating", "app=Pending"),
			states(base, "Recreating", "4", "sidecar=Recreating", "app=Pending"),
			states(base, "Recreating", "5", "sidecar=Succeeded", "app=Recreating"),
			states(base, "Completed", "6", "sidecar=Succeeded", "app=Succeeded"),
		}},
		{name: "failed", events: []*appsv1beta1.ContainerRecreateRequest{
			states(base, "Recreating", "3", "sidecar=Recreating", "app=Pending"),
			states(base, "Completed", "4", "sidecar=Failed:preStop hook failed: exit code 1", "app=Failed:an earlier container failed"),
		}, want: "2 of 2 containers were not recreated: sidecar (Failed: preStop hook failed: exit code 1); app (Failed: an earlier container failed)"},
		{name: "reopened", events: []*appsv1beta1.ContainerRecreateRequest{
			states(base, "Recreating", "3", "sidecar=Recreating", "app=Pending"),
		}, closeAt: 1, reread: states(base, "Completed", "9", "sidecar=Succeeded", "app=Succeeded")},
		{name: "timeout", events: []*appsv1beta1.ContainerRecreateRequest{
			states(base, "Recreating", "3", "sidecar=Recreating", "app=Pending"),
		}, want: "timed out after 1ms waiting for containerrecreaterequest ns/web-0-x7k2p (phase Recreating, sidecar Recreating, app Pending); it goes on"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, out, kruise := testOptions(t, "", cmdutil.DryRunNone)
			if tc.name == "timeout" {
				o.Timeout = time.Millisecond
			}
			if tc.reread != nil {
				if err := kruise.Tracker().Add(tc.reread); err != nil {
					t.Fatal(err)
				}
			}
			w := watch.NewFakeWithChanSize(len(tc.events), false)
			for _, ev := range tc.events {
				w.Modify(ev)
			}
			if tc.closeAt > 0 {
				w.Stop()
			}
			watches := 0
			kruise.PrependWatchReactor("containerrecreaterequests", func(k8stesting.Action) (bool, watch.Interface, error) {
				watches++
				if watches > 1 {
					return true, watch.NewFake(), nil
				}
				return true, w, nil
			})
			err := o.wait(context.Background(), base)
			if tc.want == "" && err != nil {
				t.Fatalf("wait: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			golden.Assert(t, "wait-"+tc.name, out.String())
		})
	}
}
