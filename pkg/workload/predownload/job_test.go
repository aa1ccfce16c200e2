package predownload

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

var daemonSetKind = appsv1beta1.SchemeGroupVersion.WithKind("DaemonSet")

// testOwner is a DaemonSet "agent" in namespace "ns" selecting app=agent.
func testOwner() (*appsv1beta1.DaemonSet, Owner) {
	ds := &appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid"}}
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	ds.Spec.Template = *template("main", "agent:2")
	ds.Spec.Template.Labels = map[string]string{"app": "agent", "tier": "node"}
	ds.Spec.Template.Annotations = map[string]string{"team": "x"}
	ds.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg-a"}, {Name: "reg-b"}}
	return ds, Owner{Object: ds, Kind: daemonSetKind, Selector: ds.Spec.Selector, Template: &ds.Spec.Template}
}

// updateRevision is revision name with hash label hash (none when "").
func updateRevision(name, hash string) *appsv1.ControllerRevision {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{}}}
	if hash != "" {
		rev.Labels[revision.HashLabel] = hash
	}
	return rev
}

func TestNewJob(t *testing.T) {
	ds, owner := testOwner()
	job := NewJob(owner, updateRevision("agent-5d4f8b", "5d4f8b"), ContainerImage{Container: "main", Image: "agent:2"},
		Settings{Parallelism: 3, TimeoutSeconds: 120})

	assert.Equal(t, "agent-5d4f8b-main", job.Name)
	assert.Equal(t, "ns", job.Namespace)
	assert.Equal(t, "agent:2", job.Spec.Image)
	ref := metav1.GetControllerOf(job)
	require.NotNil(t, ref)
	assert.Equal(t, "DaemonSet", ref.Kind)
	assert.Equal(t, ds.UID, ref.UID)
	assert.Equal(t, appsv1beta1.SchemeGroupVersion.String(), ref.APIVersion)
	assert.Equal(t, map[string]string{"app": "agent", "tier": "node", revision.HashLabel: "5d4f8b"}, job.Labels)
	assert.NotContains(t, ds.Spec.Template.Labels, revision.HashLabel, "the template's labels are left alone")

	sel := job.Spec.PodSelector.LabelSelector
	assert.Equal(t, map[string]string{"app": "agent"}, sel.MatchLabels)
	assert.Equal(t, []metav1.LabelSelectorRequirement{{Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn,
		Values: []string{"agent-5d4f8b", "5d4f8b"}}}, sel.MatchExpressions)
	assert.Empty(t, ds.Spec.Selector.MatchExpressions, "the workload's selector is left alone")

	assert.Equal(t, intstr.FromInt32(3), *job.Spec.Parallelism)
	assert.Equal(t, int32(120), *job.Spec.PullPolicy.TimeoutSeconds)
	assert.Equal(t, int32(1), *job.Spec.PullPolicy.BackoffLimit)
	assert.Equal(t, []string{"reg-a", "reg-b"}, job.Spec.PullSecrets)
	assert.Equal(t, appsv1beta1.Always, job.Spec.CompletionPolicy.Type)
	assert.Equal(t, int32(600), *job.Spec.CompletionPolicy.TTLSecondsAfterFinished)
	assert.Equal(t, map[string]string{"team": "x"}, job.Spec.SandboxConfig.Annotations)
	assert.Equal(t, job.Labels, job.Spec.SandboxConfig.Labels)
	assert.Equal(t, appsv1beta1.PullIfNotPresent, job.Spec.ImagePullPolicy)
}

func TestNewJobRevisionNamedByHash(t *testing.T) {
	_, owner := testOwner()
	job := NewJob(owner, updateRevision("5d4f8b", "5d4f8b"), ContainerImage{Container: "main", Image: "agent:2"}, Settings{Parallelism: 1})
	assert.Equal(t, []string{"5d4f8b"}, job.Spec.PodSelector.MatchExpressions[0].Values, "no value twice")
}

func TestJobName(t *testing.T) {
	assert.Equal(t, "web-5d4f8b-main", JobName("web-5d4f8b", "main"))
	long := JobName(strings.Repeat("a", 230)+"-5d4f8b", strings.Repeat("c", 63))
	other := JobName(strings.Repeat("a", 230)+"-5d4f8b", strings.Repeat("c", 62)+"d")
	assert.LessOrEqual(t, len(long), MaxJobNameLength)
	assert.NotEqual(t, long, other, "cut names stay distinct")
	assert.Equal(t, long, JobName(strings.Repeat("a", 230)+"-5d4f8b", strings.Repeat("c", 63)), "and stable")
}

func TestBuildAndUndecided(t *testing.T) {
	_, owner := testOwner()
	upd := updateRevision("agent-2", "2")
	images := []ContainerImage{{"main", "agent:2"}, {"log", "log:2"}}

	_, undecided := Undecided(upd, true)
	assert.True(t, undecided)
	for name, tc := range map[string]struct {
		upd      *appsv1.ControllerRevision
		underWay bool
		reason   string
	}{
		"no revision":     {nil, true, "no update"},
		"not under way":   {upd, false, "no update"},
		"created already": {withLabel(upd, appsv1beta1.ImagePreDownloadCreatedKey), true, "already created"},
		"ignored already": {withLabel(upd, appsv1beta1.ImagePreDownloadIgnoredKey), true, "already ignored"},
	} {
		plan, ok := Undecided(tc.upd, tc.underWay)
		assert.False(t, ok, name)
		assert.Equal(t, Nothing, plan.Action, name)
		assert.Contains(t, plan.Reason, tc.reason, name)
	}

	plan := Build(Request{Owner: owner, Update: upd, Settings: Settings{Parallelism: 1}})
	assert.Equal(t, Ignore, plan.Action, "no image changed")
	plan = Build(Request{Owner: owner, Update: upd, Images: images, Settings: Settings{Parallelism: 1, MinUpdatedReady: 2}, UpdatedReady: 1})
	assert.Equal(t, Nothing, plan.Action)
	assert.Contains(t, plan.Reason, "waiting for 2")
	plan = Build(Request{Owner: owner, Update: upd, Images: images, Settings: Settings{Parallelism: 1, MinUpdatedReady: 2}, UpdatedReady: 2})
	require.Equal(t, Create, plan.Action)
	require.Len(t, plan.Jobs, 2)
	assert.Equal(t, "agent-2-main", plan.Jobs[0].Name)
	assert.Equal(t, "log:2", plan.Jobs[1].Spec.Image)
}

func withLabel(rev *appsv1.ControllerRevision, key string) *appsv1.ControllerRevision {
	rev = rev.DeepCopy()
	rev.Labels[key] = "true"
	return rev
}
