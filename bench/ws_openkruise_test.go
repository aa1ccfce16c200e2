//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientv1 "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// OpenKruise v1.9.0 as the module proxy serves it reads WorkloadSpreads at apps.kruise.io/v1beta1
// (its CRD serves v1alpha1 and stores v1beta1, with a conversion webhook; its controller, its
// pod webhook and its discovery check use v1beta1 only), where kruise serves v1alpha1 as the
// v1.9.0 release does. Its phases therefore run on OpenKruise's own WorkloadSpread CRD, and the
// benchmarks write its WorkloadSpreads at v1beta1, whose subsets name the node terms
// requiredNodeSelector and preferredNodeSelector.
var okWSResource = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "workloadspreads"}

// wsAPI writes and reads WorkloadSpreads at the version a controller reads.
type wsAPI interface {
	create(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) error
	// list returns the WorkloadSpreads of ns, their status and metadata as the v1alpha1 type
	// holds them (the spec is not read back).
	list(ctx context.Context, ns string) ([]appsv1alpha1.WorkloadSpread, error)
}

// kruiseWS is kruise's: v1alpha1, typed.
type kruiseWS struct{ c versioned.Interface }

func (k kruiseWS) create(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) error {
	_, err := k.c.AppsV1alpha1().WorkloadSpreads(ws.Namespace).Create(ctx, ws, metav1.CreateOptions{})
	return err
}

func (k kruiseWS) list(ctx context.Context, ns string) ([]appsv1alpha1.WorkloadSpread, error) {
	l, err := k.c.AppsV1alpha1().WorkloadSpreads(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// okWS is OpenKruise's: v1beta1, through the dynamic client.
type okWS struct{ c dynamic.Interface }

func (o okWS) create(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) error {
	u, err := okWSObject(ws)
	if err != nil {
		return err
	}
	_, err = o.c.Resource(okWSResource).Namespace(ws.Namespace).Create(ctx, u, metav1.CreateOptions{})
	return err
}

func (o okWS) list(ctx context.Context, ns string) ([]appsv1alpha1.WorkloadSpread, error) {
	l, err := o.c.Resource(okWSResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]appsv1alpha1.WorkloadSpread, len(l.Items))
	for i := range l.Items {
		item := l.Items[i].DeepCopy()
		unstructured.RemoveNestedField(item.Object, "spec") // v1beta1's spec is not v1alpha1's
		raw, err := json.Marshal(item.Object)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("WorkloadSpread %s/%s at v1beta1: %w", ns, item.GetName(), err)
		}
	}
	return out, nil
}

// okWSObject is ws written at OpenKruise's v1beta1.
func okWSObject(ws *appsv1alpha1.WorkloadSpread) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(ws)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	obj["apiVersion"], obj["kind"] = okWSResource.GroupVersion().String(), "WorkloadSpread"
	delete(obj, "status")
	subsets, _, _ := unstructured.NestedSlice(obj, "spec", "subsets")
	for i := range subsets {
		s := subsets[i].(map[string]any)
		for from, to := range map[string]string{"requiredNodeSelectorTerm": "requiredNodeSelector", "preferredNodeSelectorTerms": "preferredNodeSelector"} {
			if v, ok := s[from]; ok {
				s[to] = v
				delete(s, from)
			}
		}
	}
	if err := unstructured.SetNestedSlice(obj, subsets, "spec", "subsets"); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// okWSCRD is the phase step that replaces kruise's WorkloadSpread CRD with OpenKruise's (as its
// module ships it) and, on undo, puts kruise's back as it was. It refuses when WorkloadSpreads
// exist: they would go with the CRD.
func okWSCRD(ok *openKruise) startStep {
	const name = "workloadspreads.apps.kruise.io"
	return startStep{"OpenKruise's WorkloadSpread CRD in place of kruise's", func(ctx context.Context) error {
		cc, err := ok.crdClient()
		if err != nil {
			return err
		}
		crds := cc.ApiextensionsV1().CustomResourceDefinitions()
		existing, err := ok.e.kruise.AppsV1alpha1().WorkloadSpreads("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(existing.Items) > 0 {
			return fmt.Errorf("%d WorkloadSpreads exist (e.g. %s/%s): replacing the CRD would delete them", len(existing.Items),
				existing.Items[0].Namespace, existing.Items[0].Name)
		}
		live, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		saved := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: live.Name, Labels: live.Labels, Annotations: live.Annotations},
			Spec:       *live.Spec.DeepCopy(),
		}
		raw, err := os.ReadFile(filepath.Join(ok.build.src, "config", "crd", "bases", "apps.kruise.io_workloadspreads.yaml"))
		if err != nil {
			return err
		}
		theirs := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, theirs); err != nil {
			return fmt.Errorf("OpenKruise's WorkloadSpread CRD: %w", err)
		}
		if err := replaceCRD(ctx, crds, theirs); err != nil {
			return err
		}
		ok.undo = append(ok.undo, func(ctx context.Context) error {
			if err := replaceCRD(ctx, crds, saved); err != nil {
				return fmt.Errorf("putting kruise's WorkloadSpread CRD back: %w", err)
			}
			return nil
		})
		return nil
	}}
}

// replaceCRD deletes the CRD of crd's name, waits until it is gone, creates crd and waits until
// it is Established.
func replaceCRD(ctx context.Context, crds apiextensionsclientv1.CustomResourceDefinitionInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not gone: %w", crd.Name, err)
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
