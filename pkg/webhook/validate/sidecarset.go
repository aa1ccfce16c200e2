package validate

import (
	"context"
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// SidecarSetPath is where the SidecarSet webhook is served: OpenKruise's
	// path.
	SidecarSetPath = "/validate-apps-kruise-io-sidecarset"
	// SidecarSetWebhookName names it in the webhook server's metrics and logs.
	SidecarSetWebhookName = "sidecarset-validate"
)

// Why a SidecarSet is refused (beside ReasonUndecodable,
// ReasonForbiddenUpdate and ReasonInvalidSelector: its selector,
// namespaceSelector or updateStrategy.selector is empty or malformed): the
// rejection metric's reason.
const (
	// ReasonInvalidName: the name is longer than a label value or has
	// characters OpenKruise does not take.
	ReasonInvalidName = "InvalidName"
	// ReasonInvalidContainers: a container, init container or volume is not
	// one a pod could have once injected.
	ReasonInvalidContainers = "InvalidContainers"
	// ReasonInvalidUpdateStrategy: updateStrategy's type, percentages or
	// priority/scatter terms.
	ReasonInvalidUpdateStrategy = "InvalidUpdateStrategy"
	// ReasonInvalidPatchPodMetadata: a patchPodMetadata policy, key or
	// value.
	ReasonInvalidPatchPodMetadata = "InvalidPatchPodMetadata"
	// ReasonInvalidCanary: the canary annotations name no usable base.
	ReasonInvalidCanary = "InvalidCanary"
	// ReasonRevisionNotFound: injectionStrategy.revision names no revision of
	// the SidecarSet.
	ReasonRevisionNotFound = "RevisionNotFound"
	// ReasonPatchNotAllowed: patchPodMetadata patches an annotation the
	// allow-list (ConfigMap kruise-configuration) does not allow.
	ReasonPatchNotAllowed = "PatchPodMetadataNotAllowed"
	// ReasonSidecarSetConflict: another SidecarSet that may select the same
	// pods injects a container of the same name, a volume of the same name
	// with other contents, or overwrites the same annotation.
	ReasonSidecarSetConflict = "SidecarSetConflict"
)

// SidecarSetWebhook refuses a SidecarSet, at CREATE and UPDATE, that the CRD
// schema cannot check and whose injection would break pods or clash with
// another SidecarSet: see docs/api.md, "SidecarSet". Per request it lists
// the SidecarSets with sidecarSets (they are few), when
// injectionStrategy.revision is set the SidecarSet's ControllerRevisions
// with revisions in namespace, the one kruise runs in, and, when
// patchAllow is not nil and patchPodMetadata is set, the allow-list there.
//
// scope, when not nil, routes pods to the injection webhook for the
// SidecarSet before it is admitted (ScopeIncluder); a failure admits it with
// a warning.
func SidecarSetWebhook(sidecarSets kruiseclient.SidecarSetsGetter, revisions appsv1client.ControllerRevisionsGetter, namespace string,
	patchAllow *PatchAllowList, scope ScopeIncluder) server.Webhook {
	l := &sidecarSetLookup{sidecarSets: sidecarSets, revisions: revisions, namespace: namespace, patchAllow: patchAllow}
	w := workload[appsv1beta1.SidecarSet]{
		kind: "SidecarSet", resource: "sidecarsets",
		decode: hubDecoder(appsv1alpha1.SidecarSetToV1beta1),
		meta:   func(s *appsv1beta1.SidecarSet) *metav1.ObjectMeta { return &s.ObjectMeta },
		check:  checkSidecarSet,
		lookup: l.check,
	}
	if scope != nil {
		w.admitted = func(ctx context.Context, ss *appsv1beta1.SidecarSet) []string {
			ctx, cancel := WithAnswerMargin(ctx)
			defer cancel()
			if err := scope.Include(ctx, ss); err != nil {
				klog.FromContext(ctx).Error(err, "Admitting a SidecarSet the injection webhook may not be called for yet", "sidecarSet", ss.Name)
				return []string{fmt.Sprintf("kruise could not route pods to its injection webhook for SidecarSet %s before admitting it (%v): "+
					"pods created in the next second may miss its sidecars", ss.Name, err)}
			}
			return nil
		}
	}
	return server.Webhook{
		Name: SidecarSetWebhookName, Path: SidecarSetPath, Admitter: server.AdmitFunc(w.admit),
		Reasons: []string{ReasonUndecodable, ReasonForbiddenUpdate, ReasonInvalidName, ReasonInvalidSelector,
			ReasonInvalidContainers, ReasonInvalidUpdateStrategy, ReasonInvalidPatchPodMetadata,
			ReasonInvalidCanary, ReasonRevisionNotFound, ReasonPatchNotAllowed, ReasonSidecarSetConflict},
	}
}

// ScopeIncluder makes the SidecarSet injection webhook be called for the
// pods a SidecarSet selects before the SidecarSet is stored
// (sidecarsetscope.Includer).
type ScopeIncluder interface {
	Include(ctx context.Context, ss *appsv1beta1.SidecarSet) error
}

// sidecarSetNameChars are the characters OpenKruise allows in a SidecarSet's
// name (the API server's rule allows dots too).
var sidecarSetNameChars = regexp.MustCompile(`^[a-zA-Z0-9-]+$`)

// checkSidecarSet returns what is wrong with ss, and with the update from old
// when old is not nil: the rules of the object alone, in this order.
func checkSidecarSet(ss, old *appsv1beta1.SidecarSet) []problem {
	var out problems
	var oldSpec *appsv1beta1.SidecarSetSpec
	if old != nil {
		oldSpec = &old.Spec
		out.add(ReasonForbiddenUpdate, checkUpgradeTypesKept(&old.Spec, &ss.Spec))
		out.add(ReasonForbiddenUpdate, checkCanaryBaseKept(old, ss))
	} else {
		// A stored SidecarSet keeps its name.
		out.add(ReasonInvalidName, checkSidecarSetName(ss.Name))
	}
	addSpecRules(&out, sidecarSetRules(), &ss.Spec, oldSpec)
	return out
}

// sidecarSetRules are the rules of the spec alone, in this order. What the
// CRD's CEL rules check (selector set and not empty, a non-empty
// namespaceSelector, something to inject, partition and selector not
// together, the int-or-percent forms, revision naming something, entries
// with annotations, one kind of priority) is not repeated.
func sidecarSetRules() []specRule[appsv1beta1.SidecarSetSpec] {
	return []specRule[appsv1beta1.SidecarSetSpec]{
		{ReasonInvalidSelector, checkSidecarSetSelectors},
		{ReasonInvalidContainers, checkSidecarContainers},
		{ReasonInvalidUpdateStrategy, checkSidecarSetUpdateStrategy},
		{ReasonInvalidPatchPodMetadata, checkPatchPodMetadata},
	}
}

// checkSidecarSetName: a label value (the name labels the SidecarSet's
// ControllerRevisions: kruise.io/sidecarset-name) of OpenKruise's
// characters: letters, digits and '-'.
func checkSidecarSetName(name string) field.ErrorList {
	path := field.NewPath("metadata", "name")
	var errs field.ErrorList
	if name == "" {
		return nil // generateName without a name yet: the API server names it
	}
	if len(name) > 63 {
		errs = append(errs, field.TooLong(path, name, 63))
	}
	if !sidecarSetNameChars.MatchString(name) {
		errs = append(errs, field.Invalid(path, name, "may hold only letters, digits and '-' (as in OpenKruise)"))
	}
	return errs
}

// checkUpgradeTypesKept: a container kept by an update keeps its
// upgradeType: pods injected as ColdUpgrade have one copy of it and as
// HotUpgrade two, so they could not be upgraded to the other.
func checkUpgradeTypesKept(old, spec *appsv1beta1.SidecarSetSpec) field.ErrorList {
	was := map[string]appsv1beta1.SidecarContainerUpgradeType{}
	for _, c := range old.Containers {
		was[c.Name] = upgradeType(c)
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		if t, ok := was[c.Name]; ok && t != upgradeType(c) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "containers").Index(i).Child("upgradeStrategy", "upgradeType"),
				fmt.Sprintf("container %s was %s: the upgradeType of a container cannot change, since the pods injected have it the old way", c.Name, t)))
		}
	}
	return errs
}

func upgradeType(c appsv1beta1.SidecarContainer) appsv1beta1.SidecarContainerUpgradeType {
	if c.UpgradeStrategy.UpgradeType == "" {
		return appsv1beta1.SidecarContainerColdUpgrade
	}
	return c.UpgradeStrategy.UpgradeType
}

// canaryBase is the base a canary SidecarSet names, "" when ss is not one
// (OpenKruise's reading: the canary annotation "true" and a base named).
func canaryBase(ss *appsv1beta1.SidecarSet) string {
	if ss.Annotations[appsv1beta1.SidecarSetCanaryAnnotation] != "true" {
		return ""
	}
	return ss.Annotations[appsv1beta1.SidecarSetBaseAnnotation]
}

// checkCanaryBaseKept: a canary keeps its base, as in OpenKruise.
func checkCanaryBaseKept(old, ss *appsv1beta1.SidecarSet) field.ErrorList {
	base := canaryBase(ss)
	if base == "" || old.Annotations[appsv1beta1.SidecarSetBaseAnnotation] == base {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(appsv1beta1.SidecarSetBaseAnnotation),
		"a canary SidecarSet's base cannot change")}
}
