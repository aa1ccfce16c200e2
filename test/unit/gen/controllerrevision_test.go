package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestControllerRevisionFromLeavesTheBaseAlone(t *testing.T) {
	data := []byte(`{"a":1}`)
	base := ControllerRevision("web-1", SetControllerRevisionData(data), AddControllerRevisionLabels(map[string]string{"app": "web"}))
	data[0] = 'x'
	assert.Equal(t, `{"a":1}`, string(base.Data.Raw), "the data is copied")
	r := ControllerRevisionFrom(base, SetControllerRevisionNumber(3), AddControllerRevisionLabels(map[string]string{"tier": "db"}))
	assert.Equal(t, int64(3), r.Revision)
	assert.Equal(t, map[string]string{"app": "web", "tier": "db"}, r.Labels)
	assert.Equal(t, map[string]string{"app": "web"}, base.Labels)
	assert.Zero(t, base.Revision)
}
