package version

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGetReportsLinkTimeValues(t *testing.T) {
	old := gitVersion
	t.Cleanup(func() { gitVersion = old })
	gitVersion = "v1.2.3"

	info := Get()
	assert.Equal(t, "v1.2.3", info.GitVersion)
	assert.Equal(t, runtime.Version(), info.GoVersion)
	assert.True(t, strings.HasPrefix(info.String(), "v1.2.3 (commit "), info.String())
}
