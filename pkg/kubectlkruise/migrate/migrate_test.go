package migrate

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/test/unit/golden"
)

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
}

var selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "3", "owner": "team-a"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), Selector: selector, Template: podTemplate(), MinReadySeconds: 5,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromString("50%")),
			}},
		},
	}
}

func statefulSet(claims bool) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), Selector: selector, Template: podTemplate(), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}},
		},
	}
	if claims {
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}}
	}
	return s
}

func daemonSet() *appsv1.DaemonSet {
	t := podTemplate()
	t.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100, Protocol: corev1.ProtocolTCP}}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns"},
		Spec: appsv1.DaemonSetSpec{Selector: selector, Template: t,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))}}},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3},
	}
}

func testOptions(t *testing.T, dryRun cmdutil.DryRunStrategy, kind, name string, kube []runtime.Object, kruise []runtime.Object) (*Options, *bytes.Buffer, *bytes.Buffer, *kubefake.Clientset, *kruisefake.Clientset) {
	t.Helper()
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	o := NewOptions(genericiooptions.IOStreams{Out: out, ErrOut: errOut})
	o.Namespace, o.Kind, o.Source, o.DryRun = "ns", kind, name, dryRun
	if dryRun == cmdutil.DryRunClient {
		*o.PrintFlags.OutputFormat = "yaml"
	}
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, dryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		t.Fatal(err)
	}
	o.printObject = printer.PrintObj
	kubeClient, kruiseClient := kubefake.NewSimpleClientset(kube...), kruisefake.NewSimpleClientset(kruise...)
	o.Kube, o.Kruise = kubeClient, kruiseClient
	return o, out, errOut, kubeClient, kruiseClient
}

func TestDryRunManifests(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	cases := []struct {
		name       string
		kind, src  string
		objects    []runtime.Object
		newVolumes bool
		wantWarn   string
	}{
		{name: "deployment", kind: "deployment", src: "web", objects: []runtime.Object{deployment(), hpa}, wantWarn: "HorizontalPodAutoscaler web scales Deployment web"},
		{name: "statefulset", kind: "statefulset", src: "db", objects: []runtime.Object{statefulSet(true)}, newVolumes: true},
		{name: "daemonset", kind: "daemonset", src: "agent", objects: []runtime.Object{daemonSet()}, wantWarn: "uses host ports (9100/TCP)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, out, errOut, _, kruise := testOptions(t, cmdutil.DryRunClient, tc.kind, tc.src, tc.objects, nil)
			o.NewVolumes = tc.newVolumes
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "dry-run-"+tc.name, out.String())
			if !strings.Contains(errOut.String(), tc.wantWarn) {
				t.Errorf("warnings %q do not contain %q", errOut.String(), tc.wantWarn)
			}
			if len(kruise.Actions()) != 0 {
				t.Errorf("a client dry run called the API server: %v", kruise.Actions())
			}
		})
	}
}

func TestRefused(t *testing.T) {
	foreign := &appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	cases := []struct {
		name      string
		kind, src string
		to, as    string
		kube      []runtime.Object
		kruise    []runtime.Object
		want      string
	}{
		{name: "wrong target", kind: "deployment", src: "web", to: "ads", kube: []runtime.Object{deployment()}, want: `a deployment migrates to a cloneset, not to "ads"`},
		{name: "missing", kind: "deployment", src: "gone", want: "deployment ns/gone not found"},
		{name: "claims", kind: "statefulset", src: "db", kube: []runtime.Object{statefulSet(true)}, want: "would get new, empty volumes"},
		{name: "same pod names", kind: "statefulset", src: "db", as: "db", kube: []runtime.Object{statefulSet(false)}, want: "both would create pods db-0, db-1"},
		{name: "taken name", kind: "deployment", src: "web", kube: []runtime.Object{deployment()}, kruise: []runtime.Object{foreign}, want: "cloneset.apps.kruise.io ns/web already exists and was not made by migrating deployment/web"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _, _, kube, _ := testOptions(t, cmdutil.DryRunNone, tc.kind, tc.src, tc.kube, tc.kruise)
			o.To, o.Name = tc.to, tc.as
			err := o.Validate()
			if err == nil {
				err = o.Run(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			for _, a := range kube.Actions() {
				if a.GetVerb() == "patch" {
					t.Errorf("the source was changed: %v", a)
				}
			}
		})
	}
}

func TestParseSource(t *testing.T) {
	for args, want := range map[string]string{"deploy/web": "deployment web", "deployments.apps web": "deployment web", "sts/db": "statefulset db", "ds agent": "daemonset agent", "cloneset/web": "", "web": ""} {
		kind, name, err := parseSource(strings.Fields(args))
		if got := strings.TrimSpace(kind + " " + name); got != want || (err == nil) != (want != "") {
			t.Errorf("parseSource(%q) = %q, %v; want %q", args, got, err, want)
		}
	}
}

// cloneSetAt is the migrated CloneSet with the given status.
func cloneSetAt(rv string, generation, observed int64, ready, available, updated int32) *appsv1beta1.CloneSet {
	cs := cloneSetFrom(deployment(), "web")
	cs.ResourceVersion, cs.Generation = rv, generation
	cs.Status = appsv1beta1.CloneSetStatus{ObservedGeneration: observed, Replicas: 2, ReadyReplicas: ready, AvailableReplicas: available, UpdatedReplicas: updated}
	return cs
}

func TestMigrate(t *testing.T) {
	cases := []struct {
		name     string
		existing runtime.Object
		events   []*appsv1beta1.CloneSet
		timeout  time.Duration
		want     string
		scaled   bool
	}{
		{name: "ready", events: []*appsv1beta1.CloneSet{
			cloneSetAt("2", 1, 1, 0, 0, 2),
			cloneSetAt("3", 1, 1, 1, 0, 2),
			cloneSetAt("4", 1, 1, 2, 1, 2),
			cloneSetAt("5", 1, 1, 2, 2, 2),
		}, scaled: true},
		{name: "resumed", existing: cloneSetAt("7", 1, 1, 1, 1, 2), events: []*appsv1beta1.CloneSet{cloneSetAt("8", 1, 1, 2, 2, 2)}, scaled: true},
		{name: "not-ready", events: []*appsv1beta1.CloneSet{cloneSetAt("2", 1, 1, 1, 1, 2)}, timeout: time.Millisecond,
			want: "cloneset.apps.kruise.io ns/web is not ready after 1ms; deployment web was left as it was"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var kruiseObjects []runtime.Object
			if tc.existing != nil {
				kruiseObjects = append(kruiseObjects, tc.existing)
			}
			o, out, _, kube, kruise := testOptions(t, cmdutil.DryRunNone, "deployment", "web", []runtime.Object{deployment()}, kruiseObjects)
			if tc.timeout > 0 {
				o.Timeout = tc.timeout
			}
			w := watch.NewFakeWithChanSize(len(tc.events), false)
			for _, ev := range tc.events {
				w.Modify(ev)
			}
			kruise.PrependWatchReactor("clonesets", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
			err := o.Run(context.Background())
			if tc.want == "" && err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			golden.Assert(t, "migrate-"+tc.name, out.String())
			d, err := kube.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := *d.Spec.Replicas == 0; got != tc.scaled {
				t.Errorf("deployment scaled to 0 = %v, want %v", got, tc.scaled)
			}
			cs, err := kruise.AppsV1beta1().CloneSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the CloneSet is not there: %v", err)
			}
			if cs.Annotations[MigratedFromAnnotation] != "Deployment/web" || *cs.Spec.Replicas != 2 {
				t.Errorf("CloneSet annotations %v, replicas %d; want migrated-from Deployment/web and 2 replicas", cs.Annotations, *cs.Spec.Replicas)
			}
		})
	}
}

func TestScaleDownDaemonSet(t *testing.T) {
	o, _, _, kube, _ := testOptions(t, cmdutil.DryRunNone, "daemonset", "agent", []runtime.Object{daemonSet()}, nil)
	p, err := o.readSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.scaleDown(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	d, err := kube.AppsV1().DaemonSets("ns").Get(context.Background(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Spec.NodeSelector[NodeSelectorKey]; got != "true" {
		t.Errorf("nodeSelector %v, want %s=true", d.Spec.Template.Spec.NodeSelector, NodeSelectorKey)
	}
}
