package framework

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLogEntry(t *testing.T) {
	now := time.Now().UTC()
	line := now.Format("I0102 15:04:05.000000") + `       1 leader.go:149] "Released the leader-election lease" lease="kruise-system/kruise-controller" identity="pod-a_123"`
	e, ok := ParseLogEntry(line)
	require.True(t, ok)
	assert.Equal(t, "Released the leader-election lease", e.Msg)
	assert.True(t, e.At.Equal(now.Truncate(time.Microsecond)), "%s, want %s", e.At, now)
	assert.Equal(t, "pod-a_123", LogValue(e.Line, "identity"))

	e, ok = ParseLogEntry(`I1124 22:34:12.356293       1 registry.go:12] "Say \"hi\"" controller="x" workers=2`)
	require.True(t, ok)
	assert.Equal(t, `Say "hi"`, e.Msg)
	assert.Equal(t, "x", LogValue(e.Line, "controller"))
	assert.Equal(t, "2", LogValue(e.Line, "workers"))

	e, ok = ParseLogEntry(`{"ts":1764023652356.293,"caller":"controller/leader.go:149","msg":"Controllers stopped","v":0,"controller":"x"}`)
	require.True(t, ok)
	assert.Equal(t, "Controllers stopped", e.Msg)
	assert.Equal(t, int64(1764023652356), e.At.UnixMilli())
	assert.Equal(t, "x", LogValue(e.Line, "controller"))

	_, ok = ParseLogEntry("some other output")
	assert.False(t, ok)
}
