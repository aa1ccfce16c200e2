package inplace

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestUnreadable(t *testing.T) {
	state := `{"revision":"r2","updateTimestamp":"2026-07-01T10:00:00Z","lastContainerStatuses":{}}`
	cases := []struct {
		name        string
		annotations map[string]string
		wantKey     string
	}{
		{name: "none"},
		{name: "both read", annotations: map[string]string{pub.InPlaceUpdateStateKey: state, pub.InPlaceUpdateGraceKey: `{"revision":"r2"}`}},
		{name: "state not JSON", annotations: map[string]string{pub.InPlaceUpdateStateKey: "{not json"}, wantKey: pub.InPlaceUpdateStateKey},
		{name: "legacy state not JSON", annotations: map[string]string{pub.InPlaceUpdateStateKeyOld: "[]"}, wantKey: pub.InPlaceUpdateStateKeyOld},
		{name: "grace not JSON", annotations: map[string]string{pub.InPlaceUpdateStateKey: state, pub.InPlaceUpdateGraceKey: "{"}, wantKey: pub.InPlaceUpdateGraceKey},
		{name: "grace without state", annotations: map[string]string{pub.InPlaceUpdateGraceKey: `{"revision":"r2"}`}, wantKey: pub.InPlaceUpdateGraceKey},
		{name: "grace metadata patch not JSON", annotations: map[string]string{pub.InPlaceUpdateStateKey: state,
			pub.InPlaceUpdateGraceKey: `{"revision":"r2","metaDataPatch":"ew=="}`}, wantKey: pub.InPlaceUpdateGraceKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := gen.Pod("web", gen.SetPodNamespace("ns"), gen.AddPodAnnotations(tc.annotations))
			ae := Unreadable(pod)
			if tc.wantKey == "" {
				assert.Nil(t, ae)
				return
			}
			require.NotNil(t, ae)
			assert.Equal(t, tc.wantKey, ae.Key)
			assert.Equal(t, "ns/web", ae.Pod)
			// The reader that meets it fails with the same typed error, wrapped or not: Decide,
			// or FinishGrace for a metadata patch, which only it reads.
			_, err := Decide(pod, t0)
			if err == nil {
				_, err = FinishGrace(pod, t0)
			}
			got, ok := AsAnnotationError(fmt.Errorf("refreshing: %w", err))
			require.True(t, ok, "%v", err)
			assert.Equal(t, tc.wantKey, got.Key)
		})
	}
}

func TestAnAPIErrorIsNoAnnotationError(t *testing.T) {
	_, ok := AsAnnotationError(fmt.Errorf("reading pod ns/web: %w", errors.New("connection refused")))
	assert.False(t, ok)
}

func TestReportUnreadable(t *testing.T) {
	rec := record.NewFakeRecorder(1)
	pod := gen.Pod("web-1", gen.SetPodNamespace("ns"), gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: "{not json"}))
	ReportUnreadable(context.Background(), rec, &corev1.Pod{}, pod, Unreadable(pod))
	e := <-rec.Events
	assert.Contains(t, e, "Warning "+EventReasonUnreadableAnnotation+" pod web-1 ")
	assert.Contains(t, e, pub.InPlaceUpdateStateKey)
}
