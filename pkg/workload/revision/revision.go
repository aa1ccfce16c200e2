package revision

import (
	"cmp"
	"context"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Owner is the workload whose history is kept.
type Owner struct {
	// Object is the workload: its name prefixes revision names and its UID
	// owns them.
	Object metav1.Object
	// Kind is the workload's group, version and kind, for the
	// controllerRef.
	Kind schema.GroupVersionKind
	// Selector selects the workload's revisions. Revisions carry the pod
	// template's labels, so for the pod-template workloads it is the
	// workload's pod selector. It must not be empty: an empty selector
	// would adopt every orphan revision of the namespace.
	Selector labels.Selector
	// Namespace holds the revisions; empty means the workload's own. A
	// cluster-scoped SidecarSet keeps its revisions in kruise's namespace.
	Namespace string
	// Recheck, when set, is called once before the first adoption to
	// confirm from the API server, not the cache, that the workload still
	// exists with the same UID and is not being deleted (the built-in
	// controllers recheck the same way), so a stale copy never adopts.
	Recheck func(ctx context.Context) error
}

func (o Owner) namespace() string {
	if o.Namespace != "" {
		return o.Namespace
	}
	return o.Object.GetNamespace()
}

// owns reports whether rev's controllerRef is o.
func (o Owner) owns(rev *appsv1.ControllerRevision) bool {
	ref := metav1.GetControllerOfNoCopy(rev)
	return ref != nil && ref.UID == o.Object.GetUID()
}

// Content is what a workload records in a revision.
type Content struct {
	// Data is the recorded part of the workload (see PatchData).
	Data []byte
	// Labels must match Owner.Selector; usually the pod template's.
	Labels map[string]string
	// Annotations are copied as they are (CloneSet copies its own).
	Annotations map[string]string
}

// NewRevision returns the revision of owner that records content, numbered number
// and named after the hash of its data and collisionCount. It is not
// created.
func NewRevision(owner Owner, content Content, number int64, collisionCount *int32) *appsv1.ControllerRevision {
	hash := Hash(content.Data, collisionCount)
	revLabels := maps.Clone(content.Labels)
	if revLabels == nil {
		revLabels = map[string]string{}
	}
	revLabels[HashLabel] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(owner.Object.GetName(), hash),
			Namespace:       owner.namespace(),
			Labels:          revLabels,
			Annotations:     maps.Clone(content.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner.Object, owner.Kind)},
		},
		Data:     runtime.RawExtension{Raw: slices.Clone(content.Data)},
		Revision: number,
	}
}

// Equal reports whether a and b record the same thing (see EqualData).
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	return EqualData(a.Data.Raw, b.Data.Raw)
}

// Sort orders revisions oldest first: by Revision, then creation time, then
// name.
func Sort(revisions []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revisions, func(a, b *appsv1.ControllerRevision) int {
		if c := cmp.Compare(a.Revision, b.Revision); c != 0 {
			return c
		}
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// NextNumber returns the number of a new revision after the sorted
// revisions: one more than the last, or 1.
func NextNumber(sorted []*appsv1.ControllerRevision) int64 {
	if len(sorted) == 0 {
		return 1
	}
	return sorted[len(sorted)-1].Revision + 1
}

// lastEqual returns the newest of the sorted revisions equal to want, or
// nil.
func lastEqual(sorted []*appsv1.ControllerRevision, want *appsv1.ControllerRevision) *appsv1.ControllerRevision {
	for i := len(sorted) - 1; i >= 0; i-- {
		if Equal(sorted[i], want) {
			return sorted[i]
		}
	}
	return nil
}
