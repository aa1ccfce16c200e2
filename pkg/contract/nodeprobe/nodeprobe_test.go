package nodeprobe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestProbeNames(t *testing.T) {
	p, ok := ParseProbeName(ProbeName("game", "idle"))
	require.True(t, ok)
	assert.Equal(t, Parsed{Marker: "game", Probe: "idle"}, p)
	assert.False(t, p.IsLiveness())

	p, ok = ParseProbeName(LivenessProbeName("main"))
	require.True(t, ok)
	assert.Equal(t, Parsed{Container: "main"}, p)
	assert.True(t, p.IsLiveness())

	for _, bad := range []string{"", "nohash", "#x", "x#", LivenessPrefix} {
		_, ok := ParseProbeName(bad)
		assert.False(t, ok, bad)
	}
}

func TestProbeContextRoundTrip(t *testing.T) {
	in := []ContainerLiveness{{Name: "main", LivenessProbe: &corev1.Probe{PeriodSeconds: 3,
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
	raw, err := EncodeProbeContext(in)
	require.NoError(t, err)
	out, err := ReadProbeContext(map[string]string{"k": raw}, "k")
	require.NoError(t, err)
	assert.Equal(t, in, out)

	out, err = ReadProbeContext(nil, "k")
	assert.NoError(t, err)
	assert.Nil(t, out)
	_, err = ReadProbeContext(map[string]string{"k": "{"}, "k")
	assert.Error(t, err)
}

func TestRequesterOf(t *testing.T) {
	_, err := RequesterOf(nil)
	assert.ErrorIs(t, err, ErrNoRequester)
	_, err = RequesterOf(map[string]string{RequesterAnnotation: `{"username":""}`})
	assert.Error(t, err)
	r, err := RequesterOf(map[string]string{RequesterAnnotation: `{"username":"alice","groups":["g"]}`})
	require.NoError(t, err)
	assert.Equal(t, "alice", r.Username)
}

func TestMarksRoundTrip(t *testing.T) {
	m := map[string]Marks{"game#idle": {Condition: "game.io/idle", Labels: []string{"idle"}}}
	out, err := ReadMarks(map[string]string{MarksAnnotation: EncodeMarks(m)})
	require.NoError(t, err)
	assert.Equal(t, m, out)
	assert.Equal(t, "", EncodeMarks(nil))
	out, err = ReadMarks(map[string]string{MarksAnnotation: "["})
	assert.Error(t, err)
	assert.Empty(t, out)
}
