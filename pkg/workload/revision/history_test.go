package revision

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestResolve(t *testing.T) {
	revA, revB := stored(t, "a", 1), stored(t, "b", 2)
	// openKruiseA is revA as OpenKruise (k8s.io/api 1.32) wrote it: other
	// bytes, so another name, for the same template.
	openKruiseA := gen.ControllerRevisionFrom(revA, gen.SetControllerRevisionData([]byte(
		`{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},`+
			`"spec":{"containers":[{"image":"a","name":"main","resources":{}}]}}}}`)))
	openKruiseA.Name = "web-okrevision"
	nameFor := func(image string, count int32) string {
		return Name("web", Hash(webContent(t, image).Data, &count))
	}
	type want struct {
		update, current string
		number          int64
		all             []string
		writes          int
		collisionCount  int32
	}
	tests := []struct {
		name           string
		cached         []*appsv1.ControllerRevision
		apiOnly        []*appsv1.ControllerRevision
		image, current string
		collisionCount int32
		want           want
	}{{
		name:  "the first revision is created, and is current too",
		image: "a",
		want:  want{update: nameFor("a", 0), current: nameFor("a", 0), number: 1, all: []string{nameFor("a", 0)}, writes: 1},
	}, {
		name:   "an unchanged template re-uses the newest revision",
		cached: []*appsv1.ControllerRevision{revA, revB}, image: "b", current: revA.Name,
		want: want{update: revB.Name, current: revA.Name, number: 2, all: []string{revA.Name, revB.Name}},
	}, {
		name:   "a rollback renumbers the equal old revision instead of creating one",
		cached: []*appsv1.ControllerRevision{revA, revB}, image: "a", current: revB.Name,
		want: want{update: revA.Name, current: revB.Name, number: 3, all: []string{revB.Name, revA.Name}, writes: 1},
	}, {
		name:   "OpenKruise's revision of the same template is re-used",
		cached: []*appsv1.ControllerRevision{openKruiseA}, image: "a", current: openKruiseA.Name,
		want: want{update: openKruiseA.Name, current: openKruiseA.Name, number: 1, all: []string{openKruiseA.Name}},
	}, {
		name:   "a current name not in the history falls back to the update revision",
		cached: []*appsv1.ControllerRevision{revA}, image: "b", current: "web-gone",
		want: want{update: nameFor("b", 0), current: nameFor("b", 0), number: 2, all: []string{revA.Name, nameFor("b", 0)}, writes: 1},
	}, {
		name:  "the name taken by other data is a collision: the count grows and the next name is used",
		image: "a", collisionCount: 0,
		apiOnly: []*appsv1.ControllerRevision{gen.ControllerRevisionFrom(revB, func(r *appsv1.ControllerRevision) {
			r.Name = nameFor("a", 0)
		})},
		want: want{update: nameFor("a", 1), current: nameFor("a", 1), number: 1, all: []string{nameFor("a", 1)}, writes: 2, collisionCount: 1},
	}, {
		name:  "the name taken by another workload's equal revision is a collision too",
		image: "a", collisionCount: 3,
		apiOnly: []*appsv1.ControllerRevision{gen.ControllerRevisionFrom(revA, ownedBy("db-uid"), func(r *appsv1.ControllerRevision) {
			r.Name = nameFor("a", 3)
		})},
		want: want{update: nameFor("a", 4), current: nameFor("a", 4), number: 1, all: []string{nameFor("a", 4)}, writes: 2, collisionCount: 4},
	}, {
		name:  "our own equal revision the cache has not shown yet is the one wanted",
		image: "a",
		apiOnly: []*appsv1.ControllerRevision{gen.ControllerRevisionFrom(revA, func(r *appsv1.ControllerRevision) {
			r.Name = nameFor("a", 0)
		})},
		want: want{update: nameFor("a", 0), current: nameFor("a", 0), number: 1, all: []string{nameFor("a", 0)}, writes: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(tt.cached, tt.apiOnly...)
			got, err := f.history.Resolve(context.Background(), webOwner(), webContent(t, tt.image), tt.current, tt.collisionCount)
			require.NoError(t, err)
			assert.Equal(t, tt.want.update, got.Update.Name, "update revision")
			assert.Equal(t, tt.want.current, got.Current.Name, "current revision")
			assert.Equal(t, tt.want.number, got.Update.Revision)
			assert.Equal(t, tt.want.all, names(got.All), "history, oldest first")
			assert.Equal(t, tt.want.collisionCount, got.CollisionCount)
			assert.Equal(t, tt.want.writes, f.writes(), "writes")

			onServer := f.stored(t)[got.Update.Name]
			require.NotNil(t, onServer, "the update revision is on the API server")
			assert.Equal(t, tt.want.number, onServer.Revision)
			assert.True(t, EqualData(webContent(t, tt.image).Data, onServer.Data.Raw), "it records the template")
			assert.Equal(t, "web-uid", string(metav1.GetControllerOf(onServer).UID), "web controls it")
		})
	}
}

func TestResolveNewRevisionLabels(t *testing.T) {
	f := newFixture(nil)
	content := webContent(t, "a")
	content.Annotations = map[string]string{"note": "kept"}
	got, err := f.history.Resolve(context.Background(), webOwner(), content, "", 0)
	require.NoError(t, err)
	onServer := f.stored(t)[got.Update.Name]
	require.NotNil(t, onServer)
	assert.Equal(t, map[string]string{"app": "web", HashLabel: ShortHash(got.Update.Name)}, onServer.Labels)
	assert.Equal(t, map[string]string{"note": "kept"}, onServer.Annotations)
	assert.Equal(t, "ns", onServer.Namespace)
	assert.Equal(t, []metav1.OwnerReference{{
		APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "web-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}, onServer.OwnerReferences)
}

func TestResolveGivesUpAfterTooManyCollisionsAndReportsTheCount(t *testing.T) {
	f := newFixture(nil)
	f.client.PrependReactor("create", "controllerrevisions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, "taken")
	})
	f.client.PrependReactor("get", "controllerrevisions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, stored(t, "other", 1), nil
	})
	got, err := f.history.Resolve(context.Background(), webOwner(), webContent(t, "a"), "", 2)
	require.ErrorIs(t, err, errTooManyCollisions)
	require.NotNil(t, got, "the grown count is handed back to be stored")
	assert.Equal(t, int32(2+maxCreateAttempts), got.CollisionCount)
	assert.Nil(t, got.Update)
}

func TestResolveRenumberRetriesOnConflict(t *testing.T) {
	revA, revB := stored(t, "a", 1), stored(t, "b", 2)
	f := newFixture([]*appsv1.ControllerRevision{revA, revB})
	conflicts := 1
	f.client.PrependReactor("update", "controllerrevisions", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, revA.Name, errors.New("stale"))
	})
	got, err := f.history.Resolve(context.Background(), webOwner(), webContent(t, "a"), revB.Name, 0)
	require.NoError(t, err)
	assert.Equal(t, revA.Name, got.Update.Name)
	assert.Equal(t, int64(3), f.stored(t)[revA.Name].Revision)
}

func TestResolveDoesNotRenumberARevisionWhoseDataChanged(t *testing.T) {
	revA, revB := stored(t, "a", 1), stored(t, "b", 2)
	// The API server holds other data under revA's name than the cache.
	f := newFixture([]*appsv1.ControllerRevision{revB}, gen.ControllerRevisionFrom(revA, gen.SetControllerRevisionData([]byte(`{"spec":{}}`))))
	indexerHasA := newFixture([]*appsv1.ControllerRevision{revA, revB})
	f.history.lister = indexerHasA.history.lister
	f.client.PrependReactor("update", "controllerrevisions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, revA.Name, errors.New("stale"))
	})
	_, err := f.history.Resolve(context.Background(), webOwner(), webContent(t, "a"), revB.Name, 0)
	assert.ErrorContains(t, err, "changed its data")
}
