package crradmit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Map keys are escaped as JSON pointer tokens (RFC 6901).
func TestSetEntriesEscapes(t *testing.T) {
	var p Patch
	p.SetEntries("/metadata/annotations", map[string]string{"x": "y"}, map[string]string{"a/b~c": "1", "~1": "2"})
	assert.Equal(t, Patch{
		{Op: "add", Path: "/metadata/annotations/a~1b~0c", Value: "1"},
		{Op: "add", Path: "/metadata/annotations/~01", Value: "2"},
	}, p)
}
