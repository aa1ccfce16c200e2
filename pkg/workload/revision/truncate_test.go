package revision

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestTruncate(t *testing.T) {
	var history []*appsv1.ControllerRevision
	for i, image := range []string{"v1", "v2", "v3", "v4", "v5", "v6"} {
		history = append(history, stored(t, image, int64(i+1)))
	}
	v := func(n int) string { return history[n-1].Name }
	resolved := &Revisions{All: history, Current: history[1], Update: history[5]}
	pods := []*corev1.Pod{
		gen.Pod("web-a", gen.AddPodLabels(map[string]string{PodRevisionLabel: v(1)})),
		gen.Pod("web-b", gen.AddPodLabels(map[string]string{PodRevisionLabel: ShortHash(v(3))})), // CloneSetShortHash
		gen.Pod("web-c"), // no label: keeps nothing
	}
	live := resolved.Live(pods)
	require.Equal(t, sets.New(v(1), v(2), ShortHash(v(3)), v(6)), live)

	tests := []struct {
		name        string
		limit       int32
		wantDeleted []string
	}{
		{"the oldest revision no pod uses goes first", 1, []string{v(4)}},
		{"limit 0 keeps only the live revisions", 0, []string{v(4), v(5)}},
		{"a negative limit is 0", -1, []string{v(4), v(5)}},
		{"within the limit nothing goes", 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(history)
			// Truncate sorts for itself.
			shuffled := slices.Clone(history)
			slices.Reverse(shuffled)
			require.NoError(t, f.history.Truncate(context.Background(), shuffled, tt.limit, live))
			onServer := f.stored(t)
			var deleted []string
			for _, rev := range history {
				if _, ok := onServer[rev.Name]; !ok {
					deleted = append(deleted, rev.Name)
				}
			}
			assert.Equal(t, tt.wantDeleted, deleted)
		})
	}
}

func TestTruncateIgnoresRevisionsAlreadyGone(t *testing.T) {
	gone := stored(t, "gone", 1)
	f := newFixture(nil)
	require.NoError(t, f.history.Truncate(context.Background(), []*appsv1.ControllerRevision{gone}, 0, sets.New[string]()))
	assert.Equal(t, 1, f.writes(), "the delete was sent")
}

func TestTruncateHistory(t *testing.T) {
	var history []*appsv1.ControllerRevision
	for i := range 15 {
		history = append(history, stored(t, fmt.Sprintf("v%d", i+1), int64(i+1)))
	}
	resolved := &Revisions{All: history, Current: history[13], Update: history[14]}
	pods := []*corev1.Pod{gen.Pod("web-a", gen.AddPodLabels(map[string]string{PodRevisionLabel: history[0].Name}))}
	remaining := func(t *testing.T, limit *int32) int {
		f := newFixture(history)
		require.NoError(t, f.history.TruncateHistory(context.Background(), resolved, limit, pods))
		return len(f.stored(t))
	}
	assert.Equal(t, 3+int(DefaultHistoryLimit), remaining(t, nil), "unset keeps the live three and the 10 newest others")
	assert.Equal(t, 3+2, remaining(t, ptr.To[int32](2)), "the live three and two others")
}

func TestHistoryLimit(t *testing.T) {
	assert.Equal(t, int32(10), HistoryLimit(nil))
	assert.Equal(t, int32(0), HistoryLimit(ptr.To[int32](0)))
}
