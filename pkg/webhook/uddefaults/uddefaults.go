// Package uddefaults is the mutating webhook of UnitedDeployments: at create and update it
// writes the defaults OpenKruise v1.9.0's webhook writes (v1alpha1.SetDefaultsUnitedDeployment:
// revisionHistoryLimit, the Manual update strategy, minReplicas 0 under min/max), so that the
// stored object says what the controller will do. The function is pure and below the controllers'
// tier, so that the controller can read an object stored without the webhook the same way.
package uddefaults

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// Path is where the webhook is served: OpenKruise's path.
	Path = "/mutate-apps-kruise-io-v1alpha1-uniteddeployment"
	// Name names it in the webhook server's metrics and logs.
	Name = "uniteddeployment-mutate"
)

// Webhook is the UnitedDeployment mutating webhook. It reads nothing and refuses nothing: what
// does not decode is left to the validating webhook, which refuses it.
func Webhook() server.Webhook {
	return server.Webhook{Name: Name, Path: Path, Admitter: server.AdmitFunc(admit)}
}

func admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != appsv1alpha1.GroupName || req.Resource.Resource != "uniteddeployments" ||
		req.Kind.Version != appsv1alpha1.SchemeGroupVersion.Version {
		return server.Allowed()
	}
	ops, err := Patch(req.Object.Raw)
	if err != nil {
		// vuniteddeployment.kb.io refuses what does not decode, with the reason.
		klog.FromContext(ctx).V(2).Info("Not defaulting a UnitedDeployment that does not decode", "err", err)
		return server.Allowed()
	}
	if len(ops) == 0 {
		return server.Allowed()
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return server.Errored(fmt.Errorf("encoding the patch: %w", err))
	}
	return server.Patched(body)
}

// Op is one JSON patch (RFC 6902) operation.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Patch is the JSON patch that defaults the UnitedDeployment raw; none when it has no spec (the
// validating webhook refuses it) or nothing to default.
func Patch(raw []byte) ([]Op, error) {
	ud := &appsv1alpha1.UnitedDeployment{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, ud); err != nil {
		return nil, err
	}
	// Which parents are present decides between adding a field and adding its parent.
	var present struct {
		Spec *struct {
			UpdateStrategy json.RawMessage `json:"updateStrategy"`
		} `json:"spec"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &present); err != nil {
		return nil, err
	}
	if present.Spec == nil {
		return nil, nil
	}
	before := ud.DeepCopy()
	if !appsv1alpha1.SetDefaultsUnitedDeployment(ud) {
		return nil, nil
	}
	add := func(path string, v any) Op { return Op{Op: "add", Path: path, Value: v} }
	var ops []Op
	if before.Spec.RevisionHistoryLimit == nil {
		ops = append(ops, add("/spec/revisionHistoryLimit", *ud.Spec.RevisionHistoryLimit))
	}
	switch us, old := ud.Spec.UpdateStrategy, before.Spec.UpdateStrategy; {
	case len(present.Spec.UpdateStrategy) == 0 || string(present.Spec.UpdateStrategy) == "null":
		ops = append(ops, add("/spec/updateStrategy", us))
	default:
		if us.Type != old.Type {
			ops = append(ops, add("/spec/updateStrategy/type", us.Type))
		}
		if old.ManualUpdate == nil && us.ManualUpdate != nil {
			ops = append(ops, add("/spec/updateStrategy/manualUpdate", us.ManualUpdate))
		}
	}
	for i, s := range ud.Spec.Topology.Subsets {
		if before.Spec.Topology.Subsets[i].MinReplicas == nil && s.MinReplicas != nil {
			ops = append(ops, add(fmt.Sprintf("/spec/topology/subsets/%d/minReplicas", i), s.MinReplicas))
		}
	}
	return ops, nil
}
