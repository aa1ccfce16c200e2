package revision

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestListClaims(t *testing.T) {
	orphan := gen.SetControllerRevisionOwnerReferences()
	unlabelled := func(r *appsv1.ControllerRevision) { r.Labels = map[string]string{"app": "db"} }
	owned := stored(t, "owned", 2)
	orphanMatching := stored(t, "orphan", 1, orphan)
	ownedNotMatching := stored(t, "moved", 3, unlabelled)
	orphanNotMatching := stored(t, "stranger", 4, orphan, unlabelled)
	othersMatching := stored(t, "others", 5, ownedBy("db-uid"))
	otherNamespace := stored(t, "elsewhere", 6, gen.SetControllerRevisionNamespace("other"))
	all := []*appsv1.ControllerRevision{owned, orphanMatching, ownedNotMatching, orphanNotMatching, othersMatching, otherNamespace}

	deleting := webOwner()
	deleting.Object.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1, 0)})
	recheckFails := webOwner()
	recheckFails.Recheck = func(context.Context) error { return errors.New("web was replaced") }
	rechecked := 0
	recheckPasses := webOwner()
	recheckPasses.Recheck = func(context.Context) error { rechecked++; return nil }

	tests := []struct {
		name        string
		owner       Owner
		want        []string
		wantErr     string
		wantOwners  map[string]string // revision → controller UID on the server ("" orphan)
		wantRecheck int
	}{{
		name:  "orphans matching are adopted, ours not matching released, the rest left alone",
		owner: recheckPasses,
		want:  []string{orphanMatching.Name, owned.Name},
		wantOwners: map[string]string{
			owned.Name: "web-uid", orphanMatching.Name: "web-uid", ownedNotMatching.Name: "",
			orphanNotMatching.Name: "", othersMatching.Name: "db-uid",
		},
		wantRecheck: 1,
	}, {
		name:       "a workload being deleted adopts nothing",
		owner:      deleting,
		want:       []string{owned.Name},
		wantErr:    "being deleted",
		wantOwners: map[string]string{orphanMatching.Name: ""},
	}, {
		name:       "a failed recheck adopts nothing",
		owner:      recheckFails,
		want:       []string{owned.Name},
		wantErr:    "web was replaced",
		wantOwners: map[string]string{orphanMatching.Name: ""},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rechecked = 0
			f := newFixture(all)
			got, err := f.history.List(context.Background(), tt.owner)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.want, names(got))
			onServer := f.stored(t)
			for name, uid := range tt.wantOwners {
				require.Contains(t, onServer, name)
				ref := metav1.GetControllerOf(onServer[name])
				if uid == "" {
					assert.Nil(t, ref, "%s is an orphan", name)
				} else if assert.NotNil(t, ref, "%s has a controller", name) {
					assert.Equal(t, uid, string(ref.UID), name)
				}
			}
			assert.Equal(t, tt.wantRecheck, rechecked, "recheck calls")
		})
	}
}

func TestListRefusesAnEmptySelector(t *testing.T) {
	owner := webOwner()
	owner.Selector = labels.Everything()
	f := newFixture([]*appsv1.ControllerRevision{stored(t, "orphan", 1, gen.SetControllerRevisionOwnerReferences())})
	_, err := f.history.List(context.Background(), owner)
	assert.ErrorContains(t, err, "empty selector")
	assert.Zero(t, f.writes(), "nothing adopted")
}
