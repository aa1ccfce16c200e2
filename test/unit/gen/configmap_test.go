package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConfigMapFromLeavesTheBaseAlone(t *testing.T) {
	data := map[string]string{"a": "1"}
	base := ConfigMap("cm", SetConfigMapNamespace("default"), SetConfigMapData(data))
	data["b"] = "2"
	assert.Equal(t, map[string]string{"a": "1"}, base.Data, "the data is copied")
	c := ConfigMapFrom(base, SetConfigMapData(map[string]string{"c": "3"}), SetConfigMapResourceVersion("9"))
	assert.Equal(t, map[string]string{"c": "3"}, c.Data)
	assert.Equal(t, "9", c.ResourceVersion)
	assert.Equal(t, map[string]string{"a": "1"}, base.Data)
	assert.Empty(t, base.ResourceVersion)
}
