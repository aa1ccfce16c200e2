package conversion

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

var (
	alpha = v1alpha1.SchemeGroupVersion.String()
	beta  = v1beta1.SchemeGroupVersion.String()
)

// kindConverter converts one kind's JSON between the two versions.
type kindConverter struct {
	toBeta, toAlpha func(raw []byte) (any, error)
}

// kinds are the kinds served in both versions, with the lossless Go
// conversions of pkg/apis/apps/v1alpha1.
var kinds = map[string]kindConverter{
	"NodeImage": {
		toBeta: via(v1alpha1.NodeImageToV1beta1), toAlpha: via(v1alpha1.NodeImageFromV1beta1),
	},
	"ImagePullJob": {
		toBeta: via(v1alpha1.ImagePullJobToV1beta1), toAlpha: via(v1alpha1.ImagePullJobFromV1beta1),
	},
	"ImageListPullJob": {
		toBeta: via(v1alpha1.ImageListPullJobToV1beta1), toAlpha: via(v1alpha1.ImageListPullJobFromV1beta1),
	},
	"ContainerRecreateRequest": {
		toBeta: via(v1alpha1.ContainerRecreateRequestToV1beta1), toAlpha: via(v1alpha1.ContainerRecreateRequestFromV1beta1),
	},
	"CloneSet": {
		toBeta: via(v1alpha1.CloneSetToV1beta1), toAlpha: via(v1alpha1.CloneSetFromV1beta1),
	},
	"DaemonSet": {
		toBeta: via(v1alpha1.DaemonSetToV1beta1), toAlpha: via(v1alpha1.DaemonSetFromV1beta1),
	},
	"StatefulSet": {
		toBeta: via(v1alpha1.StatefulSetToV1beta1), toAlpha: via(v1alpha1.StatefulSetFromV1beta1),
	},
	"SidecarSet": {
		toBeta: via(v1alpha1.SidecarSetToV1beta1), toAlpha: via(v1alpha1.SidecarSetFromV1beta1),
	},
}

// Kinds lists the kinds /convert converts, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// via decodes raw as In and converts it with fn.
func via[In, Out any](fn func(*In) *Out) func([]byte) (any, error) {
	return func(raw []byte) (any, error) {
		in := new(In)
		if err := decode(raw, in); err != nil {
			return nil, err
		}
		return fn(in), nil
	}
}

// decode reads raw into a typed object. A field the Go type does not know
// is an error rather than dropped: the API server has already pruned what
// the CRD's schema does not declare, and the schema is generated from these
// types, so such a field only comes from CRDs newer than this binary, and
// converting would lose it.
func decode(raw []byte, into any) error {
	strict, err := sigsjson.UnmarshalStrict(raw, into, sigsjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("%w; converting would drop it: is kruise-controller older than the installed CRDs?", errors.Join(strict...))
	}
	return nil
}

// objectHead is what an object says about itself.
type objectHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

func (h objectHead) String() string {
	name := h.Metadata.Name
	if h.Metadata.Namespace != "" {
		name = h.Metadata.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s %q", h.APIVersion, h.Kind, name)
}

// checkDesired refuses a version this webhook does not convert to.
func checkDesired(desired string) error {
	if desired != alpha && desired != beta {
		return fmt.Errorf("desiredAPIVersion %q: this webhook converts between %s and %s only", desired, alpha, beta)
	}
	return nil
}

// converted is one object's conversion.
type converted struct {
	raw  []byte
	kind string
	// passed is an object already in the wanted version, passed on as it
	// was.
	passed bool
}

// convertObject converts one object (JSON) to desired (alpha or beta). An
// object already in desired is passed on as it is.
func convertObject(raw []byte, desired string) (converted, error) {
	var head objectHead
	if err := json.Unmarshal(raw, &head); err != nil {
		return converted{}, fmt.Errorf("malformed object: %w", err)
	}
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		return converted{}, fmt.Errorf("%s: %w", head, err)
	}
	if gv.Group != v1alpha1.GroupName {
		return converted{}, fmt.Errorf("%s: this webhook converts %s objects only", head, v1alpha1.GroupName)
	}
	k, ok := kinds[head.Kind]
	if !ok {
		return converted{}, fmt.Errorf("%s: this webhook converts the kinds %v only", head, Kinds())
	}
	var obj any
	switch head.APIVersion {
	case desired:
		return converted{raw: raw, kind: head.Kind, passed: true}, nil
	case alpha:
		obj, err = k.toBeta(raw)
	case beta:
		obj, err = k.toAlpha(raw)
	default:
		return converted{}, fmt.Errorf("%s: this webhook converts between %s and %s only", head, alpha, beta)
	}
	if err != nil {
		return converted{}, fmt.Errorf("%s: %w", head, err)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return converted{}, fmt.Errorf("%s: encoding as %s: %w", head, desired, err)
	}
	return converted{raw: out, kind: head.Kind}, nil
}
