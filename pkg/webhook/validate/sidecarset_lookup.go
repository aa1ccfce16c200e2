package validate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// sidecarSetLookup holds the SidecarSet rules that read other objects: the
// other SidecarSets (conflicts, the canary's base) and the SidecarSet's
// ControllerRevisions (injectionStrategy.revision), read from the API server
// at each request: SidecarSets are few and rarely written, and a cache
// could miss one created a moment before.
type sidecarSetLookup struct {
	sidecarSets kruiseclient.SidecarSetsGetter
	revisions   appsv1client.ControllerRevisionsGetter
	// namespace is where kruise runs, and keeps SidecarSets' revisions and
	// its configuration.
	namespace string
	// patchAllow checks patchPodMetadata against the allow-list; nil: not
	// checked.
	patchAllow *PatchAllowList
}

// check returns what is wrong with ss given the other SidecarSets and its
// revisions; on UPDATE (old not nil) only what the update brings, as
// addSpecRules does: a conflict the stored object had already does not
// block its updates.
func (l *sidecarSetLookup) check(ctx context.Context, ss, old *appsv1beta1.SidecarSet) ([]problem, error) {
	ctx, cancel := WithAnswerMargin(ctx)
	defer cancel()
	list, err := l.sidecarSets.SidecarSets().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the SidecarSets: %w", err)
	}
	others := list.Items
	var out problems
	newOnly := func(rule func(*appsv1beta1.SidecarSet, []appsv1beta1.SidecarSet) field.ErrorList) field.ErrorList {
		errs := rule(ss, others)
		if old != nil && len(errs) > 0 {
			errs = withoutKnown(errs, rule(old, others))
		}
		return errs
	}
	out.add(ReasonInvalidCanary, newOnly(checkCanary))
	out.add(ReasonSidecarSetConflict, newOnly(checkConflicts))
	if r := ss.Spec.InjectionStrategy.Revision; r != nil && (old == nil || !equality.Semantic.DeepEqual(r, old.Spec.InjectionStrategy.Revision)) {
		errs, err := l.checkRevision(ctx, ss)
		if err != nil {
			return nil, err
		}
		out.add(ReasonRevisionNotFound, errs)
	}
	errs, err := l.checkPatchAllowed(ctx, ss, old)
	if err != nil {
		return nil, err
	}
	out.add(ReasonPatchNotAllowed, errs)
	return out, nil
}

// checkConflicts refuses each conflict of ss with another SidecarSet, naming
// both (sidecarset.Conflicts).
func checkConflicts(ss *appsv1beta1.SidecarSet, others []appsv1beta1.SidecarSet) field.ErrorList {
	paths := map[sidecarrules.ConflictKind]*field.Path{
		sidecarrules.ContainerConflict:  field.NewPath("spec", "containers"),
		sidecarrules.VolumeConflict:     field.NewPath("spec", "volumes"),
		sidecarrules.AnnotationConflict: field.NewPath("spec", "patchPodMetadata"),
	}
	var errs field.ErrorList
	for i := range others {
		for _, c := range sidecarrules.Conflicts(ss, &others[i]) {
			errs = append(errs, field.Invalid(paths[c.Kind], c.Name, c.String()))
		}
	}
	return errs
}

// checkCanary: a canary SidecarSet (canaryBase) names another SidecarSet
// that exists and is not a canary itself, and does not upgrade pods
// (updateStrategy NotUpdate): OpenKruise's rules.
func checkCanary(ss *appsv1beta1.SidecarSet, others []appsv1beta1.SidecarSet) field.ErrorList {
	base := canaryBase(ss)
	if base == "" {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(appsv1beta1.SidecarSetBaseAnnotation)
	var errs field.ErrorList
	if ss.Spec.UpdateStrategy.Type != appsv1beta1.NotUpdateSidecarSetStrategyType {
		errs = append(errs, field.Invalid(field.NewPath("spec", "updateStrategy", "type"), ss.Spec.UpdateStrategy.Type,
			"a canary SidecarSet only injects: its updateStrategy.type must be NotUpdate"))
	}
	if base == ss.Name {
		return append(errs, field.Invalid(path, base, "a canary SidecarSet cannot be its own base"))
	}
	for i := range others {
		if others[i].Name != base {
			continue
		}
		if canaryBase(&others[i]) != "" {
			errs = append(errs, field.Invalid(path, base, "the base of a canary SidecarSet cannot be a canary itself"))
		}
		return errs
	}
	return append(errs, field.NotFound(path, base))
}

// checkRevision: injectionStrategy.revision names one of ss's
// ControllerRevisions, by name or by custom version (OpenKruise's rule:
// pods would otherwise get no sidecars or the wrong ones).
func (l *sidecarSetLookup) checkRevision(ctx context.Context, ss *appsv1beta1.SidecarSet) (field.ErrorList, error) {
	r := ss.Spec.InjectionStrategy.Revision
	list, err := l.revisions.ControllerRevisions(l.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{sidecarrules.NameLabel: ss.Name}.String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing the ControllerRevisions of SidecarSet %s: %w", ss.Name, err)
	}
	path := field.NewPath("spec", "injectionStrategy", "revision")
	for _, cr := range list.Items {
		switch {
		case r.RevisionName != nil:
			if cr.Name == *r.RevisionName {
				return nil, nil
			}
		case r.CustomVersion != nil:
			if cr.Labels[appsv1beta1.SidecarSetCustomVersionLabel] == *r.CustomVersion {
				return nil, nil
			}
		}
	}
	why := fmt.Sprintf("names no ControllerRevision of SidecarSet %s (labelled %s=%s in namespace %s)", ss.Name, sidecarrules.NameLabel, ss.Name, l.namespace)
	switch {
	case r.RevisionName != nil:
		return field.ErrorList{field.Invalid(path.Child("revisionName"), *r.RevisionName, why)}, nil
	case r.CustomVersion != nil:
		return field.ErrorList{field.Invalid(path.Child("customVersion"), *r.CustomVersion, why)}, nil
	}
	return nil, nil
}
