package coexist

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/daemon/recorder"
)

// EventReason is the reason of the Warning Event recorded on the Node for
// each conflicting pod.
const EventReason = "ConflictingDaemon"

// CheckName names the guard's /readyz check.
const CheckName = "coexistence"

// syncPollInterval spaces the looks at whether the pod informer has synced
// (a local flag; no API request).
const syncPollInterval = 100 * time.Millisecond

// Config configures a Guard.
type Config struct {
	// Node is this daemon's node.
	Node string
	// Namespace and Name are our own pod's ($POD_NAMESPACE, $POD_NAME);
	// Name may be empty (then kruise daemons of other DaemonSets are not
	// detected, only OpenKruise's).
	Namespace, Name string
	// Recorder records the Warning Events on the Node.
	Recorder recorder.EventRecorder
}

// Guard watches the node's pods for other node daemons. It is a
// server.Checker (/readyz fails while one runs).
type Guard struct {
	cfg Config

	mu      sync.Mutex
	logger  klog.Logger
	pods    cache.Store
	synced  func() bool
	checked bool // the first look after the informer synced is done
	current []Conflict
	// reported holds the conflicting pods already logged and recorded.
	reported map[types.UID]Conflict
	// changed is closed and replaced whenever current changes.
	changed chan struct{}
}

// New returns a Guard; Watch connects it to the node's pods.
func New(cfg Config) *Guard {
	return &Guard{cfg: cfg, logger: klog.Background(), reported: map[types.UID]Conflict{}, changed: make(chan struct{})}
}

// Watch registers the guard's handlers on the node-scoped pod informer
// (field selector spec.nodeName=<node>); it reads only the informer's
// events and cache, never the API server.
func (g *Guard) Watch(ctx context.Context, pods cache.SharedIndexInformer) error {
	logger := klog.FromContext(ctx).WithName("coexist")
	if g.cfg.Name == "" {
		logger.Info("$"+PodNameEnv+" is not set: only OpenKruise's daemon is detected, not kruise daemons of other DaemonSets",
			"node", g.cfg.Node)
	}
	g.mu.Lock()
	g.logger, g.pods = logger, pods.GetStore()
	g.mu.Unlock()
	reg, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { g.changedPods(obj) },
		UpdateFunc: func(old, cur any) {
			g.changedPods(old, cur)
		},
		DeleteFunc: func(obj any) { g.changedPods(obj) },
	})
	if err != nil {
		return fmt.Errorf("adding the coexistence pod handler: %w", err)
	}
	g.mu.Lock()
	g.synced = reg.HasSynced
	g.mu.Unlock()
	return nil
}

// WaitAlone waits until the pod informer has synced and no conflicting pod
// is on the node. It returns nil then, or ctx's error when ctx ends first.
func (g *Guard) WaitAlone(ctx context.Context) error {
	g.mu.Lock()
	synced, logger := g.synced, g.logger
	g.mu.Unlock()
	if synced == nil {
		return errors.New("coexistence guard: Watch was not called")
	}
	if err := wait.PollUntilContextCancel(ctx, syncPollInterval, true, func(context.Context) (bool, error) {
		return synced(), nil
	}); err != nil {
		return err
	}
	g.mu.Lock()
	g.checked = true
	g.evaluateLocked()
	g.mu.Unlock()

	waited := false
	for {
		g.mu.Lock()
		n, changed := len(g.current), g.changed
		g.mu.Unlock()
		if n == 0 {
			if waited {
				logger.Info("No other node daemon runs on this node any more; starting", "node", g.cfg.Node)
			}
			return nil
		}
		if !waited {
			logger.Info("Waiting for the other node daemons to leave this node before acting on it", "node", g.cfg.Node, "conflicting", n)
			waited = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// StopOnConflict blocks until ctx ends (nil) or a conflicting pod appears
// on the node (a *ConflictError). Call it after WaitAlone.
func (g *Guard) StopOnConflict(ctx context.Context) error {
	for {
		g.mu.Lock()
		current, changed := g.current, g.changed
		g.mu.Unlock()
		if len(current) > 0 {
			return &ConflictError{Node: g.cfg.Node, Conflicts: current}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// Name implements server.Checker.
func (g *Guard) Name() string { return CheckName }

// Check implements server.Checker: it fails until the node's pods have been
// looked at, and while another node daemon runs on the node.
func (g *Guard) Check(*http.Request) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.checked {
		return fmt.Errorf("the pods of node %q have not been checked for other node daemons yet", g.cfg.Node)
	}
	if len(g.current) == 0 {
		return nil
	}
	return fmt.Errorf("kruise-daemon does not act on node %q while another node daemon runs there: %s", g.cfg.Node, describe(g.current))
}

// Current returns the conflicting pods last seen.
func (g *Guard) Current() []Conflict {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Conflict(nil), g.current...)
}

// changedPods looks at the node again when one of objs (the old and new
// state of one pod) may matter.
func (g *Guard) changedPods(objs ...any) {
	relevant := false
	for _, obj := range objs {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok && IsCandidate(pod, g.cfg.Namespace, g.cfg.Name) {
			relevant = true
		}
	}
	if !relevant {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// Before the first look (WaitAlone) the cache may still lack our own
	// pod; that look reads the complete cache and covers these events.
	if g.checked {
		g.evaluateLocked()
	}
}

// evaluateLocked recomputes the conflicts from the informer's cache, logs
// and records each new one and each one gone, and wakes the waiters.
func (g *Guard) evaluateLocked() {
	var pods []*corev1.Pod
	for _, obj := range g.pods.List() {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == g.cfg.Node {
			pods = append(pods, p)
		}
	}
	self := FindSelf(pods, g.cfg.Namespace, g.cfg.Name)
	current := Conflicts(pods, self)

	seen := make(map[types.UID]bool, len(current))
	for _, c := range current {
		seen[c.UID] = true
		if _, ok := g.reported[c.UID]; ok {
			continue
		}
		g.reported[c.UID] = c
		g.logger.Error(nil, "Another node daemon runs on this node; kruise-daemon does not act on it while it does",
			"pod", klog.KRef(c.Namespace, c.Name), "reason", c.Reason, "node", g.cfg.Node, "todo", c.Advice())
		if g.cfg.Recorder != nil {
			g.cfg.Recorder.Eventf(nodeRef(g.cfg.Node), corev1.EventTypeWarning, EventReason,
				"Pod %s is %s; kruise-daemon does not act on node %s while it runs: %s", c.Key(), c.Reason, g.cfg.Node, c.Advice())
		}
	}
	for uid, c := range g.reported {
		if !seen[uid] {
			delete(g.reported, uid)
			g.logger.Info("Conflicting node daemon pod is gone", "pod", klog.KRef(c.Namespace, c.Name), "node", g.cfg.Node)
		}
	}
	if !sameConflicts(g.current, current) {
		g.current = current
		close(g.changed)
		g.changed = make(chan struct{})
	}
}

func sameConflicts(a, b []Conflict) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// nodeRef is the Node the Events are about. Its UID is the node name, as
// the kubelet writes it, so `kubectl describe node` lists the Events.
func nodeRef(node string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: types.UID(node)}}
}

// ConflictError says that another node daemon appeared while kruise-daemon
// was acting on the node.
type ConflictError struct {
	Node      string
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("another node daemon started on node %q: %s; kruise-daemon stops so that only one daemon acts on this node "+
		"(after its restart it waits until the other daemon is gone)", e.Node, describe(e.Conflicts))
}

// describe lists the conflicting pods with the reason and the remedy.
func describe(cs []Conflict) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("pod %s is %s (%s)", c.Key(), c.Reason, c.Advice()))
	}
	return strings.Join(parts, "; ")
}
