package claimupdate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func tmpl(name, size string, class *string, modes ...corev1.PersistentVolumeAccessMode) corev1.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: class, AccessModes: modes,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
}

// claim is a claim of size, bound with capacity (none when capacity is "").
func claim(name, size, capacity string, class string) *corev1.PersistentVolumeClaim {
	t := tmpl(name, size, &class)
	c := t.DeepCopy()
	c.UID = types.UID("uid-" + name)
	c.Status.Phase = corev1.ClaimPending
	if capacity != "" {
		c.Status.Phase = corev1.ClaimBound
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	}
	return c
}

func str(s string) *string { return &s }

func TestCompare(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	fs := corev1.PersistentVolumeFilesystem
	cases := []struct {
		name     string
		claim    *corev1.PersistentVolumeClaim
		template corev1.PersistentVolumeClaim
		want     Fit
	}{
		{"same size", claim("d", "1Mi", "1Mi", "std"), tmpl("d", "1Mi", nil), Fits},
		{"claim larger than a shrunk template", claim("d", "2Mi", "2Mi", "std"), tmpl("d", "1Mi", nil), Fits},
		{"template grew", claim("d", "1Mi", "1Mi", "std"), tmpl("d", "2Mi", nil), Smaller},
		{"equal quantities written differently", claim("d", "1024Ki", "1Mi", "std"), tmpl("d", "1Mi", nil), Fits},
		{"default class in template, named in claim", claim("d", "1Mi", "1Mi", "std"), tmpl("d", "1Mi", nil), Fits},
		{"class changed", claim("d", "1Mi", "1Mi", "std"), tmpl("d", "1Mi", str("fast")), Differs},
		{"class changed and grew", claim("d", "1Mi", "1Mi", "std"), tmpl("d", "2Mi", str("fast")), Differs},
		{"access modes changed", claim("d", "1Mi", "1Mi", "std"), tmpl("d", "1Mi", nil, corev1.ReadWriteOncePod), Differs},
		{"access modes reordered", func() *corev1.PersistentVolumeClaim {
			c := claim("d", "1Mi", "1Mi", "std")
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteOnce}
			return c
		}(), tmpl("d", "1Mi", nil, corev1.ReadWriteOnce, corev1.ReadOnlyMany), Fits},
		{"volume mode changed", func() *corev1.PersistentVolumeClaim {
			c := claim("d", "1Mi", "1Mi", "std")
			c.Spec.VolumeMode = &fs
			return c
		}(), func() corev1.PersistentVolumeClaim { t := tmpl("d", "1Mi", nil); t.Spec.VolumeMode = &block; return t }(), Differs},
		{"template without storage request", claim("d", "1Mi", "1Mi", "std"), corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}, Fits},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compare(tc.claim, &tc.template); got != tc.want {
				t.Errorf("Compare = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDone(t *testing.T) {
	pendingFS := claim("d", "2Mi", "1Mi", "std")
	pendingFS.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name        string
		claim       *corev1.PersistentVolumeClaim
		ready, done bool
	}{
		{"capacity reached", claim("d", "2Mi", "2Mi", "std"), true, true},
		{"expanding", claim("d", "2Mi", "1Mi", "std"), false, false},
		{"file system left to grow", pendingFS, false, true},
		{"unbound", claim("d", "2Mi", "", "std"), false, false},
	} {
		if got := Ready(tc.claim); got != tc.ready {
			t.Errorf("%s: Ready = %v, want %v", tc.name, got, tc.ready)
		}
		if got := Done(tc.claim); got != tc.done {
			t.Errorf("%s: Done = %v, want %v", tc.name, got, tc.done)
		}
	}
}

func TestCount(t *testing.T) {
	templates := []corev1.PersistentVolumeClaim{tmpl("data", "2Mi", nil), tmpl("logs", "1Mi", nil)}
	pods := []Claims{
		{"data": claim("data-0", "2Mi", "2Mi", "std"), "logs": claim("logs-0", "1Mi", "1Mi", "std")}, // both fit, ready
		{"data": claim("data-1", "2Mi", "1Mi", "std"), "logs": claim("logs-1", "1Mi", "1Mi", "std")}, // data expanding
		{"data": claim("data-2", "1Mi", "1Mi", "std")},                                               // data smaller, logs missing
		{"data": claim("data-3", "2Mi", "2Mi", "other"), "logs": claim("logs-3", "1Mi", "", "std")},  // same class name irrelevant: template nil
	}
	got := Count(templates, pods)
	want := []appsv1beta1.VolumeClaimStatus{
		{VolumeClaimName: "data", CompatibleReplicas: 3, CompatibleReadyReplicas: 2},
		{VolumeClaimName: "logs", CompatibleReplicas: 3, CompatibleReadyReplicas: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("Count = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Count[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if Count(nil, pods) != nil {
		t.Error("no templates: status.volumeClaims should be empty")
	}
}

func TestPlan(t *testing.T) {
	templates := []corev1.PersistentVolumeClaim{tmpl("data", "2Mi", nil), tmpl("logs", "1Mi", str("std"))}
	cases := []struct {
		name     string
		claims   Claims
		expand   []string
		differ   int
		pending  bool
		expandTo string
	}{
		{"all fit and ready", Claims{"data": claim("d", "2Mi", "2Mi", "std"), "logs": claim("l", "1Mi", "1Mi", "std")}, nil, 0, false, ""},
		{"one to expand", Claims{"data": claim("d", "1Mi", "1Mi", "std"), "logs": claim("l", "1Mi", "1Mi", "std")}, []string{"d"}, 0, false, "2Mi"},
		{"expansion under way", Claims{"data": claim("d", "2Mi", "1Mi", "std")}, nil, 0, true, ""},
		{"unbound and smaller: waits", Claims{"data": claim("d", "1Mi", "", "std")}, nil, 0, true, ""},
		{"class differs: not expanded", Claims{"data": claim("d", "1Mi", "1Mi", "std"), "logs": claim("l", "1Mi", "1Mi", "slow")}, []string{"d"}, 1, false, "2Mi"},
		{"missing claims: nothing", Claims{}, nil, 0, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Plan(templates, tc.claims)
			var names []string
			for _, x := range p.Expand {
				names = append(names, x.Claim.Name)
				if x.Storage.String() != tc.expandTo {
					t.Errorf("expand %s to %s, want %s", x.Claim.Name, x.Storage.String(), tc.expandTo)
				}
			}
			if len(names) != len(tc.expand) || (len(names) > 0 && names[0] != tc.expand[0]) {
				t.Errorf("Expand = %v, want %v", names, tc.expand)
			}
			if len(p.Differ) != tc.differ {
				t.Errorf("Differ = %v, want %d", p.Differ, tc.differ)
			}
			if p.Pending != tc.pending {
				t.Errorf("Pending = %v, want %v", p.Pending, tc.pending)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	x := []Expansion{{Claim: claim("c", "1Mi", "1Mi", "std")}}
	cases := []struct {
		name  string
		plans []PodPlan
		limit int
		want  []int
	}{
		{"limit one, none under way", []PodPlan{{Expand: x}, {Expand: x}, {}}, 1, []int{0}},
		{"limit two", []PodPlan{{Expand: x}, {}, {Expand: x}, {Expand: x}}, 2, []int{0, 2}},
		{"one under way takes the slot", []PodPlan{{Expand: x}, {Pending: true}}, 1, nil},
		{"a pending pod's other claims go along", []PodPlan{{Expand: x}, {Pending: true, Expand: x}}, 1, []int{1}},
		{"limit zero is one", []PodPlan{{Expand: x}, {Expand: x}}, 0, []int{0}},
		{"nothing to expand", []PodPlan{{}, {Pending: true}}, 5, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Choose(tc.plans, tc.limit)
			if len(got) != len(tc.want) {
				t.Fatalf("Choose = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Choose = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestMessageIsSorted(t *testing.T) {
	got := Message([]Refusal{{Claim: "b", Reason: "B"}, {Claim: "a", Reason: "A"}})
	if got != "A; B" {
		t.Errorf("Message = %q", got)
	}
	if Message(nil) != "" {
		t.Error("no refusals: empty message (the condition is removed)")
	}
}
