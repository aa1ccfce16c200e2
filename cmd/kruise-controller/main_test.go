package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A leader that cannot renew its Lease stops its controllers and campaigns
// again in-process (pkg/controller, TestLosingLeadershipStopsControllersAndCampaignsAgain);
// it exits only when they do not stop in time. The help must say so.
func TestHelpSaysALeaderThatLosesItsLeaseCampaignsAgain(t *testing.T) {
	cmd := newCommand()
	long := strings.Join(strings.Fields(cmd.Long), " ")
	assert.NotContains(t, long, "cannot renew its lease exits")
	assert.Contains(t, long, "A leader that cannot renew its lease (the API server out of reach, say) stops its controllers and campaigns again in the same process")
	assert.Contains(t, long, "it exits with status 1 only if the controllers do not stop within --shutdown-grace-period")

	renew := cmd.Flags().Lookup("leader-elect-renew-deadline").Usage
	assert.NotContains(t, renew, "exits")
	assert.Contains(t, renew, "gives up leadership: it stops its controllers and campaigns again")
}
