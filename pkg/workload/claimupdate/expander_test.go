package claimupdate

import (
	"context"
	"strings"
	"testing"

	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

func TestExpanderPatchesAndRemembersRefusals(t *testing.T) {
	ok := claim("ok", "1Mi", "1Mi", "std")
	ok.Namespace = "ns"
	no := claim("no", "1Mi", "1Mi", "fixed")
	no.Namespace = "ns"
	no.ResourceVersion = "7"
	client := fake.NewClientset(ok, no)
	patches := map[string]int{}
	client.PrependReactor("patch", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.PatchAction).GetName()
		patches[name]++
		if name == "no" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, name,
				errForbidden("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
		}
		return false, nil, nil
	})
	rec := record.NewFakeRecorder(10)
	e := &Expander{Client: client.CoreV1()}
	owner := &corev1.ConfigMap{}
	exps := []Expansion{{Claim: ok, Storage: resource.MustParse("2Mi")}, {Claim: no, Storage: resource.MustParse("2Mi")}}

	refusals, err := e.Expand(context.Background(), rec, owner, exps)
	if err != nil {
		t.Fatal(err)
	}
	if len(refusals) != 1 || refusals[0].Claim != "no" || !strings.Contains(refusals[0].Reason, "must support resize") {
		t.Fatalf("refusals = %+v", refusals)
	}
	got, _ := client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "ok", metav1GetOptions)
	if q := got.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Mi" {
		t.Errorf("claim ok requests %s, want 2Mi", q.String())
	}
	if n := len(rec.Events); n != 2 {
		t.Fatalf("%d events, want a Normal and a Warning", n)
	}
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Normal "+ReasonSuccessfulResize) {
		t.Errorf("first event %q", ev)
	}
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Warning "+ReasonFailedResize) {
		t.Errorf("second event %q", ev)
	}

	// Again with the claim unchanged: no patch, no event, the refusal still stands.
	refusals, err = e.Expand(context.Background(), rec, owner, exps[1:])
	if err != nil || len(refusals) != 1 || patches["no"] != 1 || len(rec.Events) != 0 {
		t.Fatalf("second pass: refusals %+v err %v patches %d events %d", refusals, err, patches["no"], len(rec.Events))
	}
	if r := e.Refused(exps); len(r) != 1 || r[0].Claim != "no" {
		t.Errorf("Refused = %+v", r)
	}
	// The claim changed (its resourceVersion): it is tried again.
	changed := no.DeepCopy()
	changed.ResourceVersion = "8"
	if _, err := e.Expand(context.Background(), rec, owner, []Expansion{{Claim: changed, Storage: resource.MustParse("2Mi")}}); err != nil {
		t.Fatal(err)
	}
	if patches["no"] != 2 {
		t.Errorf("a changed claim should be tried again: %d patches", patches["no"])
	}
	// A larger size asked: tried again too; Forget drops the memory.
	e.Forget([]typesUID{no.UID})
	if r := e.Refused(exps); len(r) != 0 {
		t.Errorf("after Forget, Refused = %+v", r)
	}
}

func TestExpanderRetriesOtherErrors(t *testing.T) {
	c := claim("c", "1Mi", "1Mi", "std")
	c.Namespace = "ns"
	client := fake.NewClientset(c)
	client.PrependReactor("patch", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("busy")
	})
	e := &Expander{Client: client.CoreV1()}
	rec := record.NewFakeRecorder(10)
	refusals, err := e.Expand(context.Background(), rec, &corev1.ConfigMap{}, []Expansion{{Claim: c, Storage: resource.MustParse("2Mi")}})
	if err == nil || len(refusals) != 0 {
		t.Fatalf("a transient error is returned to retry, not a refusal: %v %+v", err, refusals)
	}
	if r := e.Refused([]Expansion{{Claim: c, Storage: resource.MustParse("2Mi")}}); len(r) != 0 {
		t.Errorf("a transient error is not remembered: %+v", r)
	}
}

type typesUID = types.UID

var metav1GetOptions = metav1.GetOptions{}

func errForbidden(msg string) error { return errors.New(msg) }
