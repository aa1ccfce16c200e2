package sidecarrules

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// RevisionReader reads SidecarSet ControllerRevisions (in the namespace kruise runs in), e.g.
// from an informer's lister. A missing revision is nil without an error.
type RevisionReader interface {
	// Revision returns the ControllerRevision name.
	Revision(name string) (*appsv1.ControllerRevision, error)
	// Revisions lists the ControllerRevisions labelled NameLabel=sidecarSet and, when
	// customVersion is not empty, SidecarSetCustomVersionLabel=customVersion.
	Revisions(sidecarSet, customVersion string) ([]*appsv1.ControllerRevision, error)
}

// RevisionToInject is ss at the version a pod being created gets, with status.latestRevision
// naming that version's ControllerRevision. Without injectionStrategy.revision it is ss (the
// latest). With one, the revision it names (revisionName, or the newest labelled customVersion) is
// injected when policy is Always (the default) or the SidecarSet's upgrade is paused; with
// Partial, a pod the updateStrategy.selector does not select gets it too, and any other pod gets
// it with the probability of a percentage updateStrategy.partition (else the latest), as
// OpenKruise does. random returns a number in [0, 1). A revision that is not there is a *Refusal:
// injecting the latest instead would hand the pod a version its owner pinned it away from.
func RevisionToInject(ss *appsv1beta1.SidecarSet, pod *corev1.Pod, revs RevisionReader, random func() float64) (*appsv1beta1.SidecarSet, error) {
	pin := ss.Spec.InjectionStrategy.Revision
	if pin == nil || (pin.RevisionName == nil && pin.CustomVersion == nil) {
		return ss, nil
	}
	pinned, err := pinnedRevision(ss, pin, revs)
	if err != nil {
		return nil, err
	}
	if ss.Spec.UpdateStrategy.Paused || pin.Policy != appsv1beta1.PartialSidecarSetInjectRevisionPolicy {
		return pinned, nil
	}
	if sel := ss.Spec.UpdateStrategy.Selector; sel != nil {
		upgrading, err := Selects(&appsv1beta1.SidecarSet{
			ObjectMeta: ss.ObjectMeta, Spec: appsv1beta1.SidecarSetSpec{Selector: sel},
		}, pod, nil)
		if err != nil {
			return nil, fmt.Errorf("SidecarSet %s: updateStrategy.selector: %w", ss.Name, err)
		}
		if !upgrading {
			return pinned, nil
		}
	}
	p, ok, err := percentage(ss.Spec.UpdateStrategy.Partition)
	if err != nil {
		return nil, fmt.Errorf("SidecarSet %s: updateStrategy.partition: %w", ss.Name, err)
	}
	if ok && random() < p {
		return pinned, nil
	}
	return ss, nil
}

func pinnedRevision(ss *appsv1beta1.SidecarSet, pin *appsv1beta1.SidecarSetInjectRevision, revs RevisionReader) (*appsv1beta1.SidecarSet, error) {
	var rev *appsv1.ControllerRevision
	if pin.RevisionName != nil {
		r, err := revs.Revision(*pin.RevisionName)
		if err != nil {
			return nil, fmt.Errorf("SidecarSet %s: reading ControllerRevision %s: %w", ss.Name, *pin.RevisionName, err)
		}
		if r == nil || r.Labels[NameLabel] != ss.Name {
			return nil, refuse(ReasonRevisionNotFound,
				"SidecarSet %s: injectionStrategy.revision.revisionName %s is not one of its ControllerRevisions", ss.Name, *pin.RevisionName)
		}
		rev = r
	} else {
		list, err := revs.Revisions(ss.Name, *pin.CustomVersion)
		if err != nil {
			return nil, fmt.Errorf("SidecarSet %s: listing ControllerRevisions of customVersion %s: %w", ss.Name, *pin.CustomVersion, err)
		}
		if len(list) == 0 {
			return nil, refuse(ReasonRevisionNotFound,
				"SidecarSet %s: injectionStrategy.revision.customVersion %s has no ControllerRevision", ss.Name, *pin.CustomVersion)
		}
		list = append([]*appsv1.ControllerRevision(nil), list...)
		revision.Sort(list)
		rev = list[len(list)-1]
	}
	out, err := AtRevision(ss, rev.Data.Raw)
	if err != nil {
		return nil, fmt.Errorf("ControllerRevision %s: %w", rev.Name, err)
	}
	out.Status.LatestRevision = rev.Name
	return out, nil
}

// percentage reads a partition like "30%" as 0.3; an integer partition (or none) is not one.
func percentage(v *intstr.IntOrString) (float64, bool, error) {
	if v == nil || v.Type != intstr.String {
		return 0, false, nil
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil || !strings.HasSuffix(v.StrVal, "%") {
		return 0, false, fmt.Errorf("%q is not a percentage", v.StrVal)
	}
	return float64(n) / 100, true, nil
}
