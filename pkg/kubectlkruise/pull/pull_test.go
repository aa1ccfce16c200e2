package pull

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/test/unit/golden"
)

func testOptions(t *testing.T, output string, dryRun cmdutil.DryRunStrategy) (*Options, *bytes.Buffer, *kruisefake.Clientset) {
	t.Helper()
	out := &bytes.Buffer{}
	o := NewOptions(genericiooptions.IOStreams{Out: out, ErrOut: out})
	o.Namespace, o.Image, o.DryRun = "ns", "registry.example.com/team/app:v2", dryRun
	o.suffix = func() string { return "q4mz8" }
	*o.PrintFlags.OutputFormat = output
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, dryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		t.Fatal(err)
	}
	o.printObject = printer.PrintObj
	kruise := kruisefake.NewSimpleClientset()
	o.Kruise = kruise
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
		{name: "nodes", mutate: func(o *Options) { o.Nodes = []string{"node-a", "node-b"} }, created: true},
		{name: "name-output", output: "name", mutate: func(o *Options) { o.AllNodes = true }, created: true},
		{name: "nodes-yaml", output: "yaml", dryRun: cmdutil.DryRunClient, mutate: func(o *Options) {
			o.Nodes = []string{"node-a", "node-b"}
			o.PullSecrets = []string{"regcred"}
			o.PullTimeout, o.BackoffLimit, o.Always, o.TTL = 90*time.Second, 1, true, time.Hour
		}},
		{name: "selector-yaml", output: "yaml", dryRun: cmdutil.DryRunClient, mutate: func(o *Options) {
			o.Selector, o.Parallelism = "pool=web,zone notin (b)", 3
		}},
		{name: "all-nodes-yaml", output: "yaml", dryRun: cmdutil.DryRunClient, mutate: func(o *Options) { o.AllNodes = true }},
		{name: "server-dry-run", dryRun: cmdutil.DryRunServer, mutate: func(o *Options) { o.AllNodes, o.Name = true, "warm-app" }, created: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, out, kruise := testOptions(t, tc.output, tc.dryRun)
			tc.mutate(o)
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
				t.Fatalf("created = %v, want %v", got, tc.created)
			}
			if tc.created && (len(creates[0].CreateOptions.DryRun) > 0) != (tc.dryRun == cmdutil.DryRunServer) {
				t.Errorf("create options %+v do not match dry run %v", creates[0].CreateOptions, tc.dryRun)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{name: "no nodes", mutate: func(*Options) {}, want: "exactly one of --nodes"},
		{name: "two choices", mutate: func(o *Options) { o.Nodes, o.AllNodes = []string{"a"}, true }, want: "exactly one of --nodes"},
		{name: "bad selector", mutate: func(o *Options) { o.Selector = "a in (" }, want: `--selector "a in (" is not a label selector`},
		{name: "wait dry run", mutate: func(o *Options) { o.AllNodes, o.Wait, o.DryRun = true, true, cmdutil.DryRunClient }, want: "--wait cannot be used with --dry-run"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _, _ := testOptions(t, "", cmdutil.DryRunNone)
			tc.mutate(o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestJobName(t *testing.T) {
	for image, want := range map[string]string{
		"nginx":                              "pull-nginx-s",
		"registry.local:5000/team/App_X:1.2": "pull-app-x-s",
		"repo/busybox@sha256:abc":            "pull-busybox-s",
		"___":                                "pull-image-s",
	} {
		if got := jobName(image, "s"); got != want {
			t.Errorf("jobName(%q) = %q, want %q", image, got, want)
		}
	}
}

// chanWatcher is a watch whose events the test sends one at a time.
type chanWatcher struct{ ch chan watch.Event }

func (w *chanWatcher) Stop()                          {}
func (w *chanWatcher) ResultChan() <-chan watch.Event { return w.ch }

const jobUID = "job-uid"

// nodeImage is the NodeImage of node with the job's tag entry and, unless
// phase is empty, that entry's status.
func nodeImage(node, rv string, phase appsv1beta1.ImagePullPhase, message string) *appsv1beta1.NodeImage {
	ni := &appsv1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: node, ResourceVersion: rv},
		Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{
			"registry.example.com/team/app": {Tags: []appsv1beta1.ImageTagSpec{{
				Tag: "v2", Version: 3,
				OwnerReferences: []corev1.ObjectReference{{Kind: "ImagePullJob", UID: jobUID}},
			}}},
			"registry.example.com/other": {Tags: []appsv1beta1.ImageTagSpec{{Tag: "v1"}}},
		}},
	}
	if phase != "" {
		ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{
			"registry.example.com/team/app": {Tags: []appsv1beta1.ImageTagStatus{
				{Tag: "v2", Version: 2, Phase: appsv1beta1.ImagePhaseFailed, Message: "an older request"},
				{Tag: "v2", Version: 3, Phase: phase, Message: message},
			}},
		}
	}
	return ni
}

func TestWait(t *testing.T) {
	job := &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "pull-app-q4mz8", Namespace: "ns", UID: jobUID, ResourceVersion: "1"},
		Spec:       appsv1beta1.ImagePullJobSpec{Image: "registry.example.com/team/app:v2"},
	}
	withStatus := func(rv string, mut func(*appsv1beta1.ImagePullJobStatus)) *appsv1beta1.ImagePullJob {
		j := job.DeepCopy()
		j.ResourceVersion = rv
		j.Status.Desired = 2
		mut(&j.Status)
		return j
	}
	done := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cases := []struct {
		name   string
		events []runtime.Object
		want   string
	}{
		{name: "succeeded", events: []runtime.Object{
			withStatus("2", func(s *appsv1beta1.ImagePullJobStatus) { s.Active = 2 }),
			nodeImage("node-a", "11", appsv1beta1.ImagePhasePulling, ""),
			nodeImage("node-b", "12", appsv1beta1.ImagePhasePulling, ""),
			nodeImage("node-a", "13", appsv1beta1.ImagePhaseSucceeded, ""),
			nodeImage("node-b", "14", appsv1beta1.ImagePhaseSucceeded, ""),
			withStatus("3", func(s *appsv1beta1.ImagePullJobStatus) { s.Succeeded, s.CompletionTime = 2, &done }),
		}},
		{name: "failed", events: []runtime.Object{
			withStatus("2", func(s *appsv1beta1.ImagePullJobStatus) { s.Active = 2 }),
			nodeImage("node-a", "11", appsv1beta1.ImagePhasePulling, ""),
			nodeImage("node-b", "12", appsv1beta1.ImagePhasePulling, ""),
			nodeImage("node-a", "13", appsv1beta1.ImagePhaseSucceeded, ""),
			nodeImage("node-b", "14", appsv1beta1.ImagePhaseFailed, "manifest unknown"),
			withStatus("3", func(s *appsv1beta1.ImagePullJobStatus) {
				s.Succeeded, s.Failed, s.CompletionTime = 1, 1, &done
				s.FailedNodes = []string{"node-b"}
				s.Failures = []appsv1beta1.NodeFailure{{Node: "node-b", Reason: "NotFound", Message: "manifest unknown"}}
			}),
		}, want: "pulling registry.example.com/team/app:v2 failed on 1 of 2 nodes:\n  node-b: NotFound: manifest unknown\n"},
		{name: "reason-from-nodeimage", events: []runtime.Object{
			nodeImage("node-a", "11", appsv1beta1.ImagePhaseFailed, "401 Unauthorized"),
			withStatus("3", func(s *appsv1beta1.ImagePullJobStatus) {
				s.Failed, s.Succeeded, s.CompletionTime, s.FailedNodes = 1, 1, &done, []string{"node-a"}
			}),
		}, want: "  node-a: 401 Unauthorized\n"},
		{name: "no-node", events: []runtime.Object{
			withStatus("3", func(s *appsv1beta1.ImagePullJobStatus) { s.Desired, s.CompletionTime = 0, &done }),
		}, want: "pulled registry.example.com/team/app:v2 on no node: none of the nodes it selects has a kruise-daemon"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, out, kruise := testOptions(t, "", cmdutil.DryRunNone)
			for _, n := range []string{"node-a", "node-b"} {
				if err := kruise.Tracker().Add(nodeImage(n, "10", "", "")); err != nil {
					t.Fatal(err)
				}
			}
			unrelated := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}
			if err := kruise.Tracker().Add(unrelated); err != nil {
				t.Fatal(err)
			}
			jobs, nodes := &chanWatcher{ch: make(chan watch.Event)}, &chanWatcher{ch: make(chan watch.Event)}
			kruise.PrependWatchReactor("imagepulljobs", func(k8stesting.Action) (bool, watch.Interface, error) { return true, jobs, nil })
			// The events start once wait has read the NodeImages and opened
			// its watch: a change stored before that first read would be in
			// it, and the output would depend on which goroutine ran first.
			watching, openedOnce := make(chan struct{}), sync.Once{}
			kruise.PrependWatchReactor("nodeimages", func(k8stesting.Action) (bool, watch.Interface, error) {
				openedOnce.Do(func() { close(watching) })
				return true, nodes, nil
			})
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				select {
				case <-watching:
				case <-stop:
					return
				}
				for _, obj := range tc.events {
					target := jobs
					if ni, isNodeImage := obj.(*appsv1beta1.NodeImage); isNodeImage {
						target = nodes
						// The API server has the change before it is seen.
						_ = kruise.Tracker().Update(appsv1beta1.SchemeGroupVersion.WithResource("nodeimages"), ni, "")
					}
					select {
					case target.ch <- watch.Event{Type: watch.Modified, Object: obj}:
					case <-stop:
						return
					}
				}
			}()
			err := o.wait(context.Background(), job)
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

func TestWaitTimeout(t *testing.T) {
	o, _, kruise := testOptions(t, "", cmdutil.DryRunNone)
	o.Timeout = time.Millisecond
	kruise.PrependWatchReactor("*", func(k8stesting.Action) (bool, watch.Interface, error) { return true, watch.NewFake(), nil })
	job := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "pull-app-q4mz8", Namespace: "ns"}}
	err := o.wait(context.Background(), job)
	if want := "timed out after 1ms waiting for imagepulljob ns/pull-app-q4mz8"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
}
