package predownload

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Action is what the controller does about a revision's images.
type Action int

const (
	// Nothing now (already decided for the revision, or waiting for updated pods to be ready).
	Nothing Action = iota
	// Ignore: the revision gains nothing from pre-download; it is labelled
	// apps.kruise.io/image-predownload-ignored so that the question is not asked again.
	Ignore
	// Create the plan's jobs, then label the revision apps.kruise.io/pre-predownload-created.
	Create
)

// Plan is a decision: what to do, why (for the log), and the jobs to create.
type Plan struct {
	Action Action
	Reason string
	Jobs   []*appsv1beta1.ImagePullJob
}

// Move is a workload's update as CloneSet's and StatefulSet's decisions read it.
type Move struct {
	// Current and Update are the workload's revisions, and CurrentTemplate and UpdateTemplate
	// their pod templates (CurrentTemplate nil when unreadable).
	Current, Update                 *appsv1.ControllerRevision
	CurrentTemplate, UpdateTemplate *corev1.PodTemplateSpec
	// UpdatedReady counts the pods at the update revision that are ready.
	UpdatedReady int
}

// UnderWay reports whether the move goes anywhere.
func (m Move) UnderWay() bool {
	return m.Current != nil && m.Update != nil && m.Current.Name != m.Update.Name
}

// Undecided reports whether the move to update still needs deciding: an update is under way
// (some pods are not at update, as the workload knows) and update carries neither label. When
// not, the plan says why.
func Undecided(update *appsv1.ControllerRevision, underWay bool) (Plan, bool) {
	if update == nil || !underWay {
		return Plan{Reason: "no update under way"}, false
	}
	if _, ok := update.Labels[appsv1beta1.ImagePreDownloadCreatedKey]; ok {
		return Plan{Reason: "jobs already created for the revision"}, false
	}
	if _, ok := update.Labels[appsv1beta1.ImagePreDownloadIgnoredKey]; ok {
		return Plan{Reason: "revision already ignored"}, false
	}
	return Plan{}, true
}

// IgnorePlan is the plan of a move that gains nothing from pre-download, for why.
func IgnorePlan(why string) Plan { return Plan{Action: Ignore, Reason: why} }

// Request is a move whose workload found it worth pre-downloading.
type Request struct {
	Owner  Owner
	Update *appsv1.ControllerRevision
	// Images are the changed images (ChangedImages).
	Images   []ContainerImage
	Settings Settings
	// UpdatedReady counts the pods at the update revision that are ready.
	UpdatedReady int
}

// Build finishes a decision: nothing to pull is ignored, too few updated pods ready waits, and
// otherwise a job per image.
func Build(r Request) Plan {
	if len(r.Images) == 0 {
		return IgnorePlan("no image changed")
	}
	if r.UpdatedReady < r.Settings.MinUpdatedReady {
		return Plan{Reason: fmt.Sprintf("%d updated pods ready, waiting for %d", r.UpdatedReady, r.Settings.MinUpdatedReady)}
	}
	jobs := make([]*appsv1beta1.ImagePullJob, 0, len(r.Images))
	for _, ci := range r.Images {
		jobs = append(jobs, NewJob(r.Owner, r.Update, ci, r.Settings))
	}
	return Plan{Action: Create, Reason: fmt.Sprintf("%d images changed", len(jobs)), Jobs: jobs}
}
