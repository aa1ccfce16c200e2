package budgetwait

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestReporterSaysOncePerReason(t *testing.T) {
	ctx := context.Background()
	rec := record.NewFakeRecorder(10)
	r := NewReporter()
	obj := pod("owner")
	a := Wait{Namespace: "ns", Pod: "a", Op: policyv1alpha1.PubUpdateOperation, Reason: "PodUnavailableBudget ns/pub: 0 allowed"}
	b := a
	b.Pod = "b"

	r.Report(ctx, rec, obj, "ns/owner", []Wait{a})
	r.Report(ctx, rec, obj, "ns/owner", []Wait{a})
	r.Report(ctx, rec, obj, "ns/owner", []Wait{b}) // another pod, the same reason: no new Event
	events := gen.DrainEvents(rec)
	if assert.Len(t, events, 1, "retries of one wait") {
		assert.Equal(t, "Normal PodUnavailableBudgetWait pod a waits (UPDATE): PodUnavailableBudget ns/pub: 0 allowed", events[0])
	}

	c := a
	c.Reason = "PodUnavailableBudget ns/pub: 0 allowed, 2 unavailable"
	r.Report(ctx, rec, obj, "ns/owner", []Wait{c})
	assert.Len(t, gen.DrainEvents(rec), 1, "a new reason")

	r.Report(ctx, rec, obj, "ns/owner", nil) // the wait ended
	r.Report(ctx, rec, obj, "ns/owner", []Wait{c})
	assert.Len(t, gen.DrainEvents(rec), 1, "a wait after the last one ended")

	r.Report(ctx, rec, obj, "ns/other", []Wait{c})
	assert.Len(t, gen.DrainEvents(rec), 1, "another workload")

	r.Forget("ns/owner")
	r.Report(ctx, rec, obj, "ns/owner", []Wait{c})
	assert.Len(t, gen.DrainEvents(rec), 1, "a workload forgotten")

	f := c
	f.Failed, f.Reason = true, "the PodUnavailableBudget could not be checked: timeout"
	r.Report(ctx, rec, obj, "ns/owner", []Wait{f})
	events = gen.DrainEvents(rec)
	if assert.Len(t, events, 1) {
		assert.True(t, strings.HasPrefix(events[0], corev1.EventTypeWarning+" "+EventReason), events[0])
	}
}

func TestMessage(t *testing.T) {
	assert.Equal(t, "", Message(nil))
	var waits []Wait
	for i := 7; i > 0; i-- {
		waits = append(waits, Wait{Pod: fmt.Sprintf("p%d", i), Op: policyv1alpha1.PubDeleteOperation, Reason: "r"})
	}
	msg := Message(waits)
	assert.True(t, strings.HasPrefix(msg, "pod p1 waits (DELETE): r; pod p2"), msg)
	assert.True(t, strings.HasSuffix(msg, "pod p5 waits (DELETE): r; and 2 more"), msg)
	assert.Equal(t, ConditionReasonRefused, ConditionReason(waits))
	assert.Equal(t, ConditionReasonCheckFailed, ConditionReason(append(waits, Wait{Failed: true})))
}
