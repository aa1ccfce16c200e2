package crrexec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// downRuntime is the fixture's runtime whose PodContainers fails while err
// is set.
type downRuntime struct {
	*fakeRuntime
	mu  sync.Mutex
	err error
}

func (r *downRuntime) PodContainers(ctx context.Context, podUID string) ([]cri.Container, error) {
	r.mu.Lock()
	err := r.err
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return r.fakeRuntime.PodContainers(ctx, podUID)
}

func (r *downRuntime) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

func withDownRuntime(f *fixture) *downRuntime {
	rt := &downRuntime{fakeRuntime: f.rt}
	f.ex.runtime = rt
	return rt
}

// syncErr syncs once, expecting the sync to fail (so the queue retries).
func (f *fixture) syncErr(t *testing.T) error {
	t.Helper()
	_, err := f.syncAll(t)
	require.Error(t, err)
	return err
}

// statusWrites counts the UpdateStatus calls on CRRs so far.
func (f *fixture) statusWrites() int {
	n := 0
	for _, a := range f.kruise.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

const sockErr = "rpc error: code = Unavailable desc = connection error: dial unix /run/containerd/containerd.sock: connect: connection refused"

func TestRuntimeDownPendingStaysPending(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	rt := withDownRuntime(f)
	rt.fail(errors.New(sockErr))

	err := f.syncErr(t)
	assert.ErrorContains(t, err, "connection refused")
	crr := f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, crr.Status.Phase)
	assert.Equal(t, "waiting for the container runtime: "+sockErr, crr.Status.Message)
	assert.Empty(t, crr.Status.ContainerRecreateStates)
	assert.Equal(t, 1, f.statusWrites())
	assert.Equal(t, []string{"Warning RuntimeUnavailable waiting for the container runtime: " + sockErr}, f.events())

	// Retries with the same error write nothing and record nothing.
	for range 3 {
		f.syncErr(t)
	}
	assert.Equal(t, 1, f.statusWrites())
	assert.Empty(t, f.events())
	assert.Empty(t, f.rt.calls(), "nothing stopped while the runtime is down")

	// Another error text is written (once) and recorded.
	rt.fail(errors.New("context deadline exceeded"))
	f.syncErr(t)
	f.syncErr(t)
	crr = f.get(t, "r")
	assert.Equal(t, "waiting for the container runtime: context deadline exceeded", crr.Status.Message)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, crr.Status.Phase)
	assert.Equal(t, 2, f.statusWrites())
	assert.Len(t, f.events(), 1)

	// Back: the request proceeds and the message goes.
	rt.fail(nil)
	f.sync(t)
	crr = f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestRecreating, crr.Status.Phase)
	assert.Empty(t, crr.Status.Message)
	assert.Equal(t, map[string]string{"main": "Recreating/killed"}, states(crr))
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
}

func TestRuntimeDownRecreatingStaysRecreating(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	rt := withDownRuntime(f)
	f.sync(t)
	require.Equal(t, map[string]string{"main": "Recreating/killed"}, states(f.get(t, "r")))
	f.events()
	writes := f.statusWrites()

	rt.fail(errors.New(sockErr))
	for range 3 {
		f.syncErr(t)
	}
	crr := f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestRecreating, crr.Status.Phase)
	assert.Equal(t, map[string]string{"main": "Recreating/killed"}, states(crr))
	assert.Equal(t, "waiting for the container runtime: "+sockErr, crr.Status.Message)
	assert.Equal(t, writes+1, f.statusWrites())
	assert.Equal(t, []string{"Warning RuntimeUnavailable waiting for the container runtime: " + sockErr}, f.events())

	// Back, nothing to do yet (main not restarted): the message still goes.
	rt.fail(nil)
	f.sync(t)
	crr = f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestRecreating, crr.Status.Phase)
	assert.Empty(t, crr.Status.Message)
	assert.Equal(t, writes+2, f.statusWrites())

	kubeletRestarts(t, f, "main", "ccc", tNow, true)
	f.sync(t)
	crr = f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, crr.Status.Phase)
	assert.Equal(t, "recreated 1 container", crr.Status.Message)
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls(), "stopped once")
}

// The runtime goes away while it stops the container (a restart of
// containerd): the container is not failed; it stays Recreating until the
// runtime is back, and the same instance is then stopped again.
func TestRuntimeGoneDuringStopRetries(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	gone := fmt.Errorf("stop: %w", status.Error(codes.Unavailable, "closing transport due to: connection error"))
	f.rt.stopErr = map[string]error{mainID: gone}

	err := f.syncErr(t)
	assert.ErrorContains(t, err, "stopping container main")
	crr := f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestRecreating, crr.Status.Phase)
	assert.Equal(t, map[string]string{"main": "Recreating"}, states(crr), "neither failed nor counted as killed")
	assert.Contains(t, crr.Status.Message, "waiting for the container runtime: ")
	assert.Contains(t, f.events(), "Warning RuntimeUnavailable waiting for the container runtime: stopping the container: "+gone.Error())

	// Back: the same instance is stopped again, and the request proceeds.
	f.rt.mu.Lock()
	f.rt.stopErr = nil
	f.rt.mu.Unlock()
	f.sync(t)
	crr = f.get(t, "r")
	assert.Equal(t, map[string]string{"main": "Recreating/killed"}, states(crr))
	assert.Empty(t, crr.Status.Message)
	assert.Equal(t, []string{"stop " + mainID, "stop " + mainID}, f.rt.calls())
}

// Any other stop failure still fails the container.
func TestStopFailureFailsContainer(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	f.rt.stopErr = map[string]error{mainID: status.Error(codes.Unknown, "runc did not terminate successfully")}
	f.sync(t)
	crr := f.get(t, "r")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, crr.Status.Phase)
	assert.Equal(t, map[string]string{"main": "Failed"}, states(crr))
}

// A runtime that hangs during the stop (the call ends at its deadline)
// is treated like one that went away: the container stays Recreating, the
// request waits for the runtime, and nothing is marked Failed. What the
// runtime said reaches the status cleaned.
func TestRuntimeHungDuringStopWaits(t *testing.T) {
	f := newFixture(t, runningPod(), newCRR("r", time.Minute, "main"))
	f.rt.stopErr = map[string]error{mainID: status.Error(codes.DeadlineExceeded, "the runtime did not answer within 2m0s; Authorization: Bearer s3cr3t-token")}
	err := f.syncErr(t)
	assert.ErrorContains(t, err, "stopping container main")
	crr := f.get(t, "r")
	assert.Equal(t, map[string]string{"main": "Recreating"}, states(crr), "neither failed nor counted as killed")
	assert.Contains(t, crr.Status.Message, "waiting for the container runtime: ")
	assert.NotContains(t, crr.Status.Message, "s3cr3t-token")
	for _, ev := range f.events() {
		assert.NotContains(t, ev, "s3cr3t-token")
		assert.NotContains(t, ev, "KillFailed")
	}
}
