package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSetNodeLabelsCopies(t *testing.T) {
	labels := map[string]string{"zone": "a"}
	n := Node("n", SetNodeLabels(labels), AddNodeLabel("type", "virtual-kubelet"))
	assert.Equal(t, map[string]string{"zone": "a", "type": "virtual-kubelet"}, n.Labels)
	assert.Equal(t, map[string]string{"zone": "a"}, labels, "the caller's map is not changed")
	assert.Nil(t, Node("n", SetNodeLabels(nil)).Labels)
	assert.NotNil(t, Node("n", SetNodeLabels(map[string]string{})).Labels)
}
