package sidecarrules

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func expr(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestSelectorsMayOverlap(t *testing.T) {
	labels := func(kv ...string) *metav1.LabelSelector {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &metav1.LabelSelector{MatchLabels: m}
	}
	exprs := func(rs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: rs}
	}
	for _, tc := range []struct {
		name string
		x, y *metav1.LabelSelector
		want bool
	}{
		{"same labels", labels("app", "web"), labels("app", "web"), true},
		{"different values of one key", labels("app", "web"), labels("app", "db"), false},
		{"different keys", labels("app", "web"), labels("tier", "front"), true},
		{"an extra Exists on another key (OpenKruise says disjoint)", labels("app", "web"),
			exprs(expr("app", metav1.LabelSelectorOpIn, "web"), expr("env", metav1.LabelSelectorOpExists)), true},
		{"In lists that share a value", exprs(expr("app", metav1.LabelSelectorOpIn, "a", "b")),
			exprs(expr("app", metav1.LabelSelectorOpIn, "b", "c")), true},
		{"In lists that share none", exprs(expr("app", metav1.LabelSelectorOpIn, "a", "b")),
			exprs(expr("app", metav1.LabelSelectorOpIn, "c")), false},
		{"NotIn excluding the only value", labels("app", "web"), exprs(expr("app", metav1.LabelSelectorOpNotIn, "web")), false},
		{"NotIn excluding one of two values", exprs(expr("app", metav1.LabelSelectorOpIn, "web", "db")),
			exprs(expr("app", metav1.LabelSelectorOpNotIn, "web")), true},
		{"two NotIn lists", exprs(expr("app", metav1.LabelSelectorOpNotIn, "web")),
			exprs(expr("app", metav1.LabelSelectorOpNotIn, "db")), true},
		{"Exists against DoesNotExist", exprs(expr("app", metav1.LabelSelectorOpExists)),
			exprs(expr("app", metav1.LabelSelectorOpDoesNotExist)), false},
		{"a value against DoesNotExist", labels("app", "web"), exprs(expr("app", metav1.LabelSelectorOpDoesNotExist)), false},
		{"NotIn against DoesNotExist: a pod without the label", exprs(expr("app", metav1.LabelSelectorOpNotIn, "web")),
			exprs(expr("app", metav1.LabelSelectorOpDoesNotExist)), true},
		{"nil matches everything", nil, labels("app", "web"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SelectorsMayOverlap(tc.x, tc.y); got != tc.want {
				t.Errorf("SelectorsMayOverlap(x, y) = %v, want %v", got, tc.want)
			}
			if got := SelectorsMayOverlap(tc.y, tc.x); got != tc.want {
				t.Errorf("SelectorsMayOverlap(y, x) = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMayOverlapNamespaces(t *testing.T) {
	inNamespace := func(name, ns string) *appsv1beta1.SidecarSet {
		ss := sidecarSet("agent:1")
		ss.Name = name
		if ns != "" {
			ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
		}
		return ss
	}
	for _, tc := range []struct {
		name string
		a, b *appsv1beta1.SidecarSet
		want bool
	}{
		{"same namespace", inNamespace("a", "prod"), inNamespace("b", "prod"), true},
		{"different namespaces", inNamespace("a", "prod"), inNamespace("b", "dev"), false},
		{"every namespace against one", inNamespace("a", ""), inNamespace("b", "dev"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MayOverlap(tc.a, tc.b); got != tc.want {
				t.Errorf("MayOverlap = %v, want %v", got, tc.want)
			}
		})
	}
	noSelector := inNamespace("a", "")
	noSelector.Spec.Selector = nil
	if MayOverlap(noSelector, inNamespace("b", "")) {
		t.Errorf("a SidecarSet without a selector selects nothing, yet overlaps")
	}
}

// named is a SidecarSet of name selecting app=web with the given edits.
func named(name string, edit func(*appsv1beta1.SidecarSetSpec)) *appsv1beta1.SidecarSet {
	ss := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1beta1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	edit(&ss.Spec)
	return ss
}

func containers(names ...string) []appsv1beta1.SidecarContainer {
	var out []appsv1beta1.SidecarContainer
	for _, n := range names {
		out = append(out, appsv1beta1.SidecarContainer{Container: corev1.Container{Name: n, Image: n + ":1"}})
	}
	return out
}

func emptyDir(name, size string) corev1.Volume {
	v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	if size != "" {
		q := resource.MustParse(size)
		v.EmptyDir.SizeLimit = &q
	}
	return v
}

func patch(policy appsv1beta1.SidecarSetPatchPolicyType, keys ...string) []appsv1beta1.SidecarSetPatchPodMetadata {
	a := map[string]string{}
	for _, k := range keys {
		a[k] = "v"
	}
	return []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: a, PatchPolicy: policy}}
}

func TestConflicts(t *testing.T) {
	conflict := func(kind ConflictKind, name string) Conflict {
		return Conflict{SidecarSet: "new", Other: "old", Kind: kind, Name: name}
	}
	for _, tc := range []struct {
		name     string
		ss, peer func(*appsv1beta1.SidecarSetSpec)
		want     []Conflict
	}{
		{"same container name",
			func(s *appsv1beta1.SidecarSetSpec) { s.Containers = containers("log", "proxy") },
			func(s *appsv1beta1.SidecarSetSpec) { s.Containers = containers("proxy") },
			[]Conflict{conflict(ContainerConflict, "proxy")}},
		{"an init container against a container",
			func(s *appsv1beta1.SidecarSetSpec) { s.InitContainers = containers("proxy") },
			func(s *appsv1beta1.SidecarSetSpec) { s.Containers = containers("proxy") },
			[]Conflict{conflict(ContainerConflict, "proxy")}},
		{"a hot-upgrade container's copies",
			func(s *appsv1beta1.SidecarSetSpec) {
				s.Containers = containers("envoy")
				s.Containers[0].UpgradeStrategy.UpgradeType = appsv1beta1.SidecarContainerHotUpgrade
			},
			func(s *appsv1beta1.SidecarSetSpec) { s.Containers = containers("envoy-2") },
			[]Conflict{conflict(ContainerConflict, "envoy-2")}},
		{"different names",
			func(s *appsv1beta1.SidecarSetSpec) { s.Containers = containers("log") },
			func(s *appsv1beta1.SidecarSetSpec) { s.Containers = containers("proxy") },
			nil},
		{"a volume of the same name and contents (quantities compared by value)",
			func(s *appsv1beta1.SidecarSetSpec) { s.Volumes = []corev1.Volume{emptyDir("data", "1Gi")} },
			func(s *appsv1beta1.SidecarSetSpec) { s.Volumes = []corev1.Volume{emptyDir("data", "1024Mi")} },
			nil},
		{"a volume of the same name, different contents",
			func(s *appsv1beta1.SidecarSetSpec) { s.Volumes = []corev1.Volume{emptyDir("data", "")} },
			func(s *appsv1beta1.SidecarSetSpec) { s.Volumes = []corev1.Volume{emptyDir("data", "1Gi")} },
			[]Conflict{conflict(VolumeConflict, "data")}},
		{"Overwrite against MergePatchJson",
			func(s *appsv1beta1.SidecarSetSpec) {
				s.PatchPodMetadata = patch(appsv1beta1.SidecarSetOverwritePatchPolicy, "k", "x")
			},
			func(s *appsv1beta1.SidecarSetSpec) {
				s.PatchPodMetadata = patch(appsv1beta1.SidecarSetMergePatchJsonPatchPolicy, "k")
			},
			[]Conflict{conflict(AnnotationConflict, "k")}},
		{"MergePatchJson on both sides",
			func(s *appsv1beta1.SidecarSetSpec) {
				s.PatchPodMetadata = patch(appsv1beta1.SidecarSetMergePatchJsonPatchPolicy, "k")
			},
			func(s *appsv1beta1.SidecarSetSpec) {
				s.PatchPodMetadata = patch(appsv1beta1.SidecarSetMergePatchJsonPatchPolicy, "k")
			},
			nil},
		{"Retain never conflicts",
			func(s *appsv1beta1.SidecarSetSpec) {
				s.PatchPodMetadata = patch(appsv1beta1.SidecarSetRetainPatchPolicy, "k")
			},
			func(s *appsv1beta1.SidecarSetSpec) {
				s.PatchPodMetadata = patch(appsv1beta1.SidecarSetOverwritePatchPolicy, "k")
			},
			nil},
		{"disjoint selectors",
			func(s *appsv1beta1.SidecarSetSpec) { s.Containers = containers("proxy") },
			func(s *appsv1beta1.SidecarSetSpec) {
				s.Containers = containers("proxy")
				s.Selector.MatchLabels["app"] = "db"
			},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Conflicts(named("new", tc.ss), named("old", tc.peer))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Conflicts = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConflictsSkipsItselfAndCanaries(t *testing.T) {
	proxy := func(s *appsv1beta1.SidecarSetSpec) { s.Containers = containers("proxy") }
	base, canary := named("base", proxy), named("canary", proxy)
	if got := Conflicts(base, named("base", proxy)); got != nil {
		t.Errorf("a SidecarSet conflicts with its own stored version: %v", got)
	}
	canary.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: "base"}
	if got := Conflicts(canary, base); got != nil {
		t.Errorf("a canary conflicts with its base: %v", got)
	}
	if got := Conflicts(base, canary); got != nil {
		t.Errorf("a base conflicts with its canary: %v", got)
	}
	if got := Conflicts(canary, named("other", proxy)); len(got) != 1 {
		t.Errorf("a canary does not conflict with a SidecarSet other than its base: %v", got)
	}
}

func TestConflictNamesBoth(t *testing.T) {
	msg := Conflict{SidecarSet: "new", Other: "old", Kind: VolumeConflict, Name: "data"}.String()
	for _, want := range []string{"new", "old", `"data"`, "volume"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}
