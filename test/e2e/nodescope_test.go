//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The node-scope contract, spelled out rather than imported from the product.
const (
	// crrNodeLabel names the node a ContainerRecreateRequest belongs to.
	crrNodeLabel = "crr.apps.kruise.io/node-name"
	// heartbeatLeasePrefix + <node> is the name of a node's daemon heartbeat Lease.
	heartbeatLeasePrefix = "kruise-daemon-"
)

var (
	dryRunPatch  = metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	dryRunUpdate = metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	dryRunCreate = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
)

// kruise-daemon's service account may write only the objects of the node its token is bound to,
// whatever RBAC grants it (deploy/base/admission-policy.yaml). The test plays the daemon of a
// fake node with a token of kruise-system/kruise-daemon bound to that Node, and checks what it
// may and may not write. Writes to the real node's objects are server-side dry runs: admission,
// and so the policy, runs on them as on any other write, but nothing is stored.
func TestNodeScope(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	// The test's stand-in daemon needs a token bound to a Node (real daemons' tokens are bound to
	// their pod, which carries the node name from 1.30 on).
	if m := f.ServerMinor(t); m < 31 {
		t.Skipf("Kubernetes 1.%d binds no service-account token to a Node object (ServiceAccountTokenNodeBinding, on by default from 1.31), which this test's stand-in daemon needs", m)
	}
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	realNode := framework.NodeName()

	admission := f.Client.AdmissionregistrationV1()
	if _, err := admission.ValidatingAdmissionPolicies().Get(ctx, framework.NodeScopePolicy, metav1.GetOptions{}); err != nil {
		t.Fatalf("the node-scope admission policy is not deployed (deploy/base/admission-policy.yaml): %v", err)
	}
	if _, err := admission.ValidatingAdmissionPolicyBindings().Get(ctx, framework.NodeScopePolicy, metav1.GetOptions{}); err != nil {
		t.Fatalf("the node-scope admission policy's binding is not deployed (deploy/base/admission-policy.yaml): %v", err)
	}

	suffix := rand.String(5)
	fake := "e2e-nodescope-" + suffix
	f.FakeNode(ctx, t, kc, fake, map[string]string{"kubernetes.io/hostname": fake, "kruise.e2e/fake-node": suffix})
	fakeNode, err := f.Client.CoreV1().Nodes().Get(ctx, fake, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading fake node %s: %v", fake, err)
	}
	fakeNI, err := kc.AppsV1beta1().NodeImages().Get(ctx, fake, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the fake node's NodeImage: %v", err)
	}
	realNI, err := kc.AppsV1beta1().NodeImages().Get(ctx, realNode, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the real node's NodeImage: %v", err)
	}
	// Status patches that only this test would write, valid for each NodeImage (status.desired
	// is required once there is a status).
	fakePatch := firstSyncPatch(fakeNI.Status.Desired, "written by TestNodeScope "+suffix)
	realPatch := firstSyncPatch(realNI.Status.Desired, "written by TestNodeScope "+suffix)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Delete(ctx, heartbeatLeasePrefix+fake, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting the fake node's Lease: %v", err)
		}
	})

	// The daemon of the fake node: a token bound to the fake Node object.
	d := f.ClientsForToken(t, f.ServiceAccountToken(ctx, t, framework.KruiseNamespace, framework.DaemonServiceAccount,
		&authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: fake, UID: fakeNode.UID}))
	otherNode := []string{"bound to node '" + fake + "'", "belongs to node '" + realNode + "'"}

	t.Run("node-bound token names the node", func(t *testing.T) {
		who := framework.WhoAmI(ctx, t, d.Client)
		if who.Username != framework.DaemonUser {
			t.Errorf("user %q, want %q", who.Username, framework.DaemonUser)
		}
		if got := who.Extra[framework.NodeNameExtra]; !slices.Equal(got, []string{fake}) {
			t.Errorf("extra %s = %v, want [%s] (all extra: %v)", framework.NodeNameExtra, got, fake, who.Extra)
		}
	})

	t.Run("NodeImage status", func(t *testing.T) {
		_, err := d.Kruise.AppsV1beta1().NodeImages().Patch(ctx, fake, types.MergePatchType, fakePatch, metav1.PatchOptions{}, "status")
		requireAllowed(t, "patching the fake node's NodeImage status", err)
		if got, err := kc.AppsV1beta1().NodeImages().Get(ctx, fake, metav1.GetOptions{}); err != nil {
			t.Errorf("reading NodeImage %s back: %v", fake, err)
		} else if s := got.Status.FirstSyncStatus; s == nil || !strings.Contains(s.Message, suffix) {
			t.Errorf("NodeImage %s status.firstSyncStatus = %+v, want the test's message", fake, s)
		}
		_, err = d.Kruise.AppsV1beta1().NodeImages().Patch(ctx, fake, types.MergePatchType, fakePatch, dryRunPatch, "status")
		requireAllowed(t, "patching the fake node's NodeImage status (dry run)", err)

		_, err = d.Kruise.AppsV1beta1().NodeImages().Patch(ctx, realNode, types.MergePatchType, realPatch, dryRunPatch, "status")
		requireNodeScopeDenied(t, "patching the real node's NodeImage status (dry run)", err, otherNode...)
	})

	t.Run("NodePodProbe status", func(t *testing.T) {
		// kruise-controller keeps one NodePodProbe per node; the test makes the ones that are
		// missing (the fake node's, at least) and removes what it made.
		for _, node := range []string{fake, realNode} {
			_, err := kc.AppsV1alpha1().NodePodProbes().Create(ctx, &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: node}},
				metav1.CreateOptions{})
			switch {
			case err == nil:
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					err := kc.AppsV1alpha1().NodePodProbes().Delete(ctx, node, metav1.DeleteOptions{})
					if err != nil && !apierrors.IsNotFound(err) {
						t.Logf("deleting NodePodProbe %s: %v", node, err)
					}
				})
			case !apierrors.IsAlreadyExists(err):
				t.Fatalf("creating NodePodProbe %s: %v", node, err)
			}
		}
		// A result for a pod that does not exist: no daemon probes it, and the test's own.
		patch := []byte(`{"status":{"podProbeStatuses":[{"name":"none","namespace":"none","uid":"nodescope-` + suffix +
			`","probeStates":[{"name":"nodescope#` + suffix + `","state":"Succeeded","message":"written by TestNodeScope"}]}]}}`)
		_, err := d.Kruise.AppsV1alpha1().NodePodProbes().Patch(ctx, fake, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		requireAllowed(t, "patching the fake node's NodePodProbe status", err)
		if got, err := kc.AppsV1alpha1().NodePodProbes().Get(ctx, fake, metav1.GetOptions{}); err != nil {
			t.Errorf("reading NodePodProbe %s back: %v", fake, err)
		} else if s := got.Status.PodProbeStatuses; len(s) != 1 || !strings.Contains(s[0].UID, suffix) {
			t.Errorf("NodePodProbe %s status = %+v, want the test's", fake, got.Status)
		}
		_, err = d.Kruise.AppsV1alpha1().NodePodProbes().Patch(ctx, realNode, types.MergePatchType, patch, dryRunPatch, "status")
		requireNodeScopeDenied(t, "patching the real node's NodePodProbe status (dry run)", err, otherNode...)
	})

	t.Run("ContainerRecreateRequest status", func(t *testing.T) {
		ns := f.NewNamespace(ctx, t, "nodescope")
		// CRRs for a pod that never starts: kruise-controller completes them at their deadline
		// (3 s) without routing them, so no daemon works on them, but they keep their node label.
		pendingPod(ctx, t, f, ns, "pending")
		for _, node := range []string{fake, realNode} {
			crr := endingCRR(ns, "for-"+node, "pending")
			crr.Labels = map[string]string{crrNodeLabel: node}
			if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating CRR %s: %v", crr.Name, err)
			}
			got := framework.WaitCRR(ctx, t, kc, ns, crr.Name, crrTimeout, "CRR "+crr.Name+" completed", completed)
			if got.Labels[crrNodeLabel] != node {
				t.Fatalf("CRR %s has labels %v, want %s=%s", crr.Name, got.Labels, crrNodeLabel, node)
			}
		}
		updateStatus := func(name string, opts metav1.UpdateOptions, mutate func(*appsv1alpha1.ContainerRecreateRequest)) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				crr, err := d.Kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				crr.Status.Message = "written by TestNodeScope " + suffix
				mutate(crr)
				_, err = d.Kruise.AppsV1alpha1().ContainerRecreateRequests(ns).UpdateStatus(ctx, crr, opts)
				return err
			})
		}
		noChange := func(*appsv1alpha1.ContainerRecreateRequest) {}

		requireAllowed(t, "updating the status of the fake node's CRR",
			updateStatus("for-"+fake, metav1.UpdateOptions{}, noChange))
		if got, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "for-"+fake, metav1.GetOptions{}); err != nil {
			t.Errorf("reading CRR for-%s back: %v", fake, err)
		} else if !strings.Contains(got.Status.Message, suffix) {
			t.Errorf("CRR for-%s status.message = %q, want the test's", fake, got.Status.Message)
		}
		requireNodeScopeDenied(t, "updating the status of the real node's CRR (dry run)",
			updateStatus("for-"+realNode, dryRunUpdate, noChange), otherNode...)
		// Relabelling cannot move another node's CRR to one's own: the status subresource keeps
		// the stored labels, and the policy checks the old object as well.
		requireNodeScopeDenied(t, "updating the status of the real node's CRR relabelled for the fake node (dry run)",
			updateStatus("for-"+realNode, dryRunUpdate, func(crr *appsv1alpha1.ContainerRecreateRequest) {
				crr.Labels[crrNodeLabel] = fake
			}), otherNode...)
	})

	t.Run("heartbeat Lease", func(t *testing.T) {
		leases := d.Client.CoordinationV1().Leases(framework.KruiseNamespace)
		now := metav1.NewMicroTime(time.Now())
		own := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: framework.KruiseNamespace, Name: heartbeatLeasePrefix + fake},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(fake), LeaseDurationSeconds: ptr.To[int32](40), AcquireTime: &now, RenewTime: &now,
			},
		}
		created, err := leases.Create(ctx, own, metav1.CreateOptions{})
		requireAllowed(t, "creating the fake node's Lease", err)
		if err == nil {
			renewed := metav1.NewMicroTime(time.Now())
			created.Spec.RenewTime = &renewed
			_, err = leases.Update(ctx, created, metav1.UpdateOptions{})
			requireAllowed(t, "renewing the fake node's Lease", err)
		}

		realLease := heartbeatLeasePrefix + realNode
		framework.WaitFor(ctx, t, time.Minute, "Lease "+realLease, func(ctx context.Context) (bool, string, error) {
			_, err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, realLease, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, "not there yet", nil
			}
			return err == nil, "found", err
		})
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			l, err := leases.Get(ctx, realLease, metav1.GetOptions{})
			if err != nil {
				return err
			}
			l.Spec.HolderIdentity = ptr.To(fake)
			l.Spec.RenewTime = &now
			_, err = leases.Update(ctx, l, dryRunUpdate)
			return err
		})
		requireNodeScopeDenied(t, "renewing the real node's Lease (dry run)", err, otherNode...)

		// The policy answers before the store would say AlreadyExists.
		steal := own.DeepCopy()
		steal.Name = realLease
		_, err = leases.Create(ctx, steal, dryRunCreate)
		requireNodeScopeDenied(t, "creating the real node's Lease (dry run)", err, otherNode...)

		other := own.DeepCopy()
		other.Name = "e2e-nodescope-" + suffix
		_, err = leases.Create(ctx, other, dryRunCreate)
		requireNodeScopeDenied(t, "creating a Lease that is no daemon's heartbeat (dry run)", err,
			"bound to node '"+fake+"'", "belongs to no node")
	})

	t.Run("Events", func(t *testing.T) {
		fakeImage := corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "NodeImage", Name: fake, UID: fakeNI.UID}
		realNodeRef := corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: realNode}
		somePod := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: metav1.NamespaceDefault, Name: "any-pod-" + suffix}
		cases := []struct {
			name     string
			core     bool
			reporter string
			about    corev1.ObjectReference
			denied   []string // nil: allowed
		}{
			{name: "core, own node, about own NodeImage", core: true, reporter: fake, about: fakeImage},
			{name: "core, reported as the real node", core: true, reporter: realNode, about: fakeImage, denied: otherNode},
			{name: "core, about the real Node", core: true, reporter: fake, about: realNodeRef, denied: otherNode},
			{name: "core, no reporter", core: true, about: fakeImage, denied: []string{"belongs to no node"}},
			{name: "events.k8s.io, own node, about own NodeImage", reporter: fake, about: fakeImage},
			{name: "events.k8s.io, reported as the real node", reporter: realNode, about: fakeImage, denied: otherNode},
			// What the policy cannot check: an Event about a Pod (or a CRR) names no node.
			{name: "core, own node, about any Pod (not checked)", core: true, reporter: fake, about: somePod},
		}
		for _, tc := range cases {
			var err error
			if tc.core {
				_, err = d.Client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, coreEvent(tc.reporter, tc.about), dryRunCreate)
			} else {
				_, err = d.Client.EventsV1().Events(metav1.NamespaceDefault).Create(ctx, eventsEvent(tc.reporter, tc.about), dryRunCreate)
			}
			what := "creating an Event (dry run): " + tc.name
			if tc.denied == nil {
				requireAllowed(t, what, err)
			} else {
				requireNodeScopeDenied(t, what, err, tc.denied...)
			}
		}

		// The daemon may patch Events (its recorder counts repeats that way), but only its own:
		// rewriting the real node's Event as one's own is denied, for the old object counts too.
		rewrite := []byte(fmt.Sprintf(`{"source":{"host":%q},"reportingInstance":%q,"message":"rewritten by TestNodeScope"}`, fake, fake))
		for _, reporter := range []string{fake, realNode} {
			ev, err := f.Client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, coreEvent(reporter, somePod), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating an Event reported by %s: %v", reporter, err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := f.Client.CoreV1().Events(ev.Namespace).Delete(ctx, ev.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Logf("deleting Event %s: %v", ev.Name, err)
				}
			})
			_, err = d.Client.CoreV1().Events(ev.Namespace).Patch(ctx, ev.Name, types.MergePatchType, rewrite, dryRunPatch)
			what := "patching an Event reported by " + reporter + " as reported by the fake node (dry run)"
			if reporter == fake {
				requireAllowed(t, what, err)
			} else {
				requireNodeScopeDenied(t, what, err, otherNode...)
			}
		}
	})

	t.Run("token bound to no node", func(t *testing.T) {
		u := f.ClientsForToken(t, f.ServiceAccountToken(ctx, t, framework.KruiseNamespace, framework.DaemonServiceAccount, nil))
		who := framework.WhoAmI(ctx, t, u.Client)
		if who.Username != framework.DaemonUser {
			t.Errorf("user %q, want %q", who.Username, framework.DaemonUser)
		}
		if got, ok := who.Extra[framework.NodeNameExtra]; ok {
			t.Errorf("a token bound to nothing carries %s=%v", framework.NodeNameExtra, got)
		}
		// Not a dry run: denied all the same.
		_, err := u.Kruise.AppsV1beta1().NodeImages().Patch(ctx, fake, types.MergePatchType, fakePatch, metav1.PatchOptions{}, "status")
		requireNodeScopeDenied(t, "patching the fake node's NodeImage status with an unbound token", err,
			"is not bound to a node", framework.DaemonUser)
	})

	// A token bound to the real daemon's pod is what the kubelet projects into it: it carries the
	// pod's node, which may write its own objects and no other node's.
	t.Run("pod-bound token of the real daemon", func(t *testing.T) {
		pods, err := f.Client.CoreV1().Pods(framework.KruiseNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=kruise-daemon", FieldSelector: "spec.nodeName=" + realNode,
		})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("finding the kruise-daemon pod of node %s: %v (found %d)", realNode, err, len(pods.Items))
		}
		pod := pods.Items[0]
		p := f.ClientsForToken(t, f.ServiceAccountToken(ctx, t, framework.KruiseNamespace, framework.DaemonServiceAccount,
			&authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}))
		if got := framework.WhoAmI(ctx, t, p.Client).Extra[framework.NodeNameExtra]; !slices.Equal(got, []string{realNode}) {
			t.Fatalf("a token bound to pod %s has %s=%v, want [%s]", pod.Name, framework.NodeNameExtra, got, realNode)
		}
		_, err = p.Kruise.AppsV1beta1().NodeImages().Patch(ctx, realNode, types.MergePatchType, realPatch, dryRunPatch, "status")
		requireAllowed(t, "patching the real node's NodeImage status as its daemon (dry run)", err)
		_, err = p.Kruise.AppsV1beta1().NodeImages().Patch(ctx, fake, types.MergePatchType, fakePatch, dryRunPatch, "status")
		requireNodeScopeDenied(t, "patching the fake node's NodeImage status as the real node's daemon (dry run)", err,
			"bound to node '"+realNode+"'", "belongs to node '"+fake+"'")
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			l, err := p.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, heartbeatLeasePrefix+realNode, metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = p.Client.CoordinationV1().Leases(framework.KruiseNamespace).Update(ctx, l, dryRunUpdate)
			return err
		})
		requireAllowed(t, "renewing the real node's Lease as its daemon (dry run)", err)
	})

	// The denials above show the policy in force; the real daemon keeps renewing its heartbeat
	// under it (its CRR and pull writes are covered by the CRR and image pull tests).
	t.Run("real daemon keeps writing", func(t *testing.T) {
		since := time.Now()
		name := heartbeatLeasePrefix + realNode
		framework.WaitFor(ctx, t, time.Minute, "the real daemon to renew Lease "+name+" under the policy",
			func(ctx context.Context) (bool, string, error) {
				l, err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				if l.Spec.RenewTime == nil {
					return false, "no renewTime", nil
				}
				return l.Spec.RenewTime.After(since), fmt.Sprintf("renewTime %s, holder %v", l.Spec.RenewTime.UTC().Format(time.RFC3339Nano), ptr.Deref(l.Spec.HolderIdentity, "")), nil
			})
	})
}

// firstSyncPatch is a merge patch of a NodeImage's status that only the test would write;
// desired is the NodeImage's current status.desired.
func firstSyncPatch(desired int32, message string) []byte {
	raw, err := json.Marshal(map[string]any{"status": map[string]any{
		"desired":         desired,
		"firstSyncStatus": map[string]any{"status": "Succeeded", "message": message},
	}})
	if err != nil {
		panic(err)
	}
	return raw
}

// coreEvent is a core/v1 Event as kruise-daemon's recorder writes it, reported by node reporter
// ("" for none).
func coreEvent(reporter string, about corev1.ObjectReference) *corev1.Event {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "e2e-nodescope." + rand.String(8)},
		InvolvedObject: about,
		Reason:         "NodeScopeE2E",
		Message:        "written by TestNodeScope",
		Type:           corev1.EventTypeNormal,
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	if reporter != "" {
		ev.Source = corev1.EventSource{Component: "kruise-daemon", Host: reporter}
		ev.ReportingController = "kruise-daemon"
		ev.ReportingInstance = reporter
	}
	return ev
}

// eventsEvent is an events.k8s.io/v1 Event reported by node reporter.
func eventsEvent(reporter string, about corev1.ObjectReference) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "e2e-nodescope." + rand.String(8)},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "kruise-daemon",
		ReportingInstance:   reporter,
		Action:              "Check",
		Reason:              "NodeScopeE2E",
		Regarding:           about,
		Note:                "written by TestNodeScope",
		Type:                corev1.EventTypeNormal,
	}
}

func requireAllowed(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v; want it allowed", what, err)
	}
}

// requireNodeScopeDenied fails unless err is the node-scope policy's Forbidden and its message
// holds every one of wants.
func requireNodeScopeDenied(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: allowed; want it denied by %s", what, framework.NodeScopePolicy)
		return
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), framework.NodeScopePolicy+": "):
		t.Errorf("%s: %v; want a Forbidden from %s", what, err, framework.NodeScopePolicy)
		return
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: denied with %q; want the message to say %q", what, err.Error(), w)
		}
	}
	t.Logf("%s: denied: %v", what, err)
}
