package cri

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Labels and annotations the kubelet puts on every container it creates.
// They are the only link from a CRI container back to its pod.
const (
	LabelPodUID            = "io.kubernetes.pod.uid"
	LabelPodName           = "io.kubernetes.pod.name"
	LabelPodNamespace      = "io.kubernetes.pod.namespace"
	LabelContainerName     = "io.kubernetes.container.name"
	AnnotationRestartCount = "io.kubernetes.container.restartCount"
)

// CallMargin is added to the runtime-side timeout of StopContainer and
// ExecSync to get the gRPC deadline, so that the runtime's own timeout (and
// the SIGKILL that follows it) fires first. Same margin as the kubelet's
// default runtime request timeout.
const CallMargin = DefaultCallTimeout

// ExecOutputCap is how many bytes of each of stdout and stderr ExecSync keeps.
const ExecOutputCap = 16 << 10

// ContainerState is our own view of a CRI container state.
type ContainerState string

const (
	ContainerCreated ContainerState = "created"
	ContainerRunning ContainerState = "running"
	ContainerExited  ContainerState = "exited"
	ContainerUnknown ContainerState = "unknown"
)

func stateFromCRI(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerExited
	default:
		return ContainerUnknown
	}
}

// Container is one container instance of a pod, as the runtime sees it.
type Container struct {
	ID        string
	SandboxID string
	// Name is the container's name in the pod spec.
	Name string
	// Attempt grows by one each time the kubelet recreates the container.
	Attempt uint32
	State   ContainerState
	// CreatedAt comes from ListContainers, as do the fields above.
	CreatedAt time.Time

	// StatusKnown says StartedAt, FinishedAt, ExitCode and Reason were read
	// with ContainerStatus. PodContainers reads them only for the newest
	// instance of each name that has started (see PodContainers).
	StatusKnown bool
	StartedAt   time.Time
	FinishedAt  time.Time
	ExitCode    int32
	Reason      string

	// RestartCount is the kubelet's restart count of this instance.
	RestartCount int32
	PodUID       string
	PodNamespace string
	PodName      string
}

// ExecResult is the outcome of a command run with ExecSync. Stdout and
// Stderr keep at most the last ExecOutputCap bytes each: the end of the
// output is where a failing command says why.
type ExecResult struct {
	Stdout    []byte
	Stderr    []byte
	ExitCode  int32
	Truncated bool
}

// ErrBadRestartCount marks a container whose kubelet restart-count
// annotation is missing or not a number.
var ErrBadRestartCount = errors.New("bad " + AnnotationRestartCount + " annotation")

// RawContainerID strips the "<runtime>://" prefix the pod status puts on
// container IDs ("containerd://abc" -> "abc"); CRI wants the bare ID.
func RawContainerID(id string) string {
	if _, raw, ok := strings.Cut(id, "://"); ok {
		return raw
	}
	return id
}

// Newest returns the most recent instance of the named container: highest
// attempt, then latest creation time (an attempt counter reset by a kubelet
// that lost its state must not make an old instance look newer).
func Newest(cs []Container, name string) (Container, bool) {
	var best Container
	found := false
	for _, c := range cs {
		if c.Name != name {
			continue
		}
		if !found || newer(c, best) {
			best, found = c, true
		}
	}
	return best, found
}

func newer(a, b Container) bool {
	if a.Attempt != b.Attempt {
		return a.Attempt > b.Attempt
	}
	return a.CreatedAt.After(b.CreatedAt)
}

// PodContainers lists the pod's containers with one ListContainers call
// filtered on the kubelet's pod-UID label (the runtime filters; the node's
// other containers never cross the socket). ListContainers carries ID, name,
// attempt, state, creation time, labels and annotations. Start/finish times
// and exit codes need ContainerStatus, one call per container, so it is
// called only for the newest instance of each name that is running or has
// exited: that is the instance a recreate acts on and then watches, while
// older instances are history. A container removed between the two calls
// keeps StatusKnown false.
func (r *remoteRuntime) PodContainers(ctx context.Context, podUID string) ([]Container, error) {
	if podUID == "" {
		// An empty selector would list every container of the node.
		return nil, errors.New("listing pod containers: empty pod UID")
	}
	listCtx, cancel := r.bounded(ctx)
	resp, err := r.client.ListContainers(listCtx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{LabelPodUID: podUID}},
	})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("CRI ListContainers for pod UID %s: %w", podUID, noAnswer(ctx, listCtx, err, r.callTimeout))
	}
	out := make([]Container, 0, len(resp.GetContainers()))
	for _, c := range resp.GetContainers() {
		ct, err := containerFromCRI(c)
		if err != nil {
			return nil, err
		}
		out = append(out, ct)
	}
	sortContainers(out)

	logger := klog.FromContext(ctx)
	for i := range out {
		c := &out[i]
		if c.State == ContainerCreated || c.State == ContainerUnknown {
			continue
		}
		// out is sorted newest first within a name, so the first of each
		// name is its newest instance.
		if i > 0 && out[i-1].Name == c.Name {
			continue
		}
		statusCtx, cancel := r.bounded(ctx)
		st, err := r.client.ContainerStatus(statusCtx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ID})
		cancel()
		if status.Code(err) == codes.NotFound {
			logger.V(4).Info("Container removed while listing", "podUID", podUID, "container", c.Name, "containerID", c.ID)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("CRI ContainerStatus of container %q (%s): %w", c.Name, c.ID, noAnswer(ctx, statusCtx, err, r.callTimeout))
		}
		applyStatus(c, st.GetStatus())
	}
	return out, nil
}

func containerFromCRI(c *runtimeapi.Container) (Container, error) {
	labels := c.GetLabels()
	name := labels[LabelContainerName]
	if name == "" {
		name = c.GetMetadata().GetName()
	}
	rc, err := parseRestartCount(c.GetAnnotations())
	if err != nil {
		return Container{}, fmt.Errorf("container %q (%s): %w", name, c.GetId(), err)
	}
	return Container{
		ID:           c.GetId(),
		SandboxID:    c.GetPodSandboxId(),
		Name:         name,
		Attempt:      c.GetMetadata().GetAttempt(),
		State:        stateFromCRI(c.GetState()),
		CreatedAt:    unixNanos(c.GetCreatedAt()),
		RestartCount: rc,
		PodUID:       labels[LabelPodUID],
		PodNamespace: labels[LabelPodNamespace],
		PodName:      labels[LabelPodName],
	}, nil
}

// parseRestartCount reads the kubelet's annotation. The kubelet writes it on
// every container; a missing or garbled value means we cannot tell
// instances apart reliably, so it is an error rather than a silent 0.
func parseRestartCount(annotations map[string]string) (int32, error) {
	v, ok := annotations[AnnotationRestartCount]
	if !ok {
		return 0, fmt.Errorf("%w: missing", ErrBadRestartCount)
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q is not a non-negative integer", ErrBadRestartCount, v)
	}
	return int32(n), nil
}

func applyStatus(c *Container, st *runtimeapi.ContainerStatus) {
	if st == nil {
		return
	}
	c.StatusKnown = true
	// The status is newer than the list entry.
	c.State = stateFromCRI(st.GetState())
	c.StartedAt = unixNanos(st.GetStartedAt())
	c.FinishedAt = unixNanos(st.GetFinishedAt())
	c.ExitCode = st.GetExitCode()
	c.Reason = st.GetReason()
}

// sortContainers orders by name, then newest instance first, so output is
// stable and the newest instance of a name comes first.
func sortContainers(cs []Container) {
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].Name != cs[j].Name {
			return cs[i].Name < cs[j].Name
		}
		return newer(cs[i], cs[j])
	})
}

// unixNanos treats 0 as "not set": CRI uses 0 for times that have not
// happened yet (a running container's FinishedAt).
func unixNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// criSeconds rounds a duration up to whole seconds for CRI timeouts: rounding
// down would give a container less grace than asked for (500ms -> 0 means
// "kill now" for StopContainer, "no limit" for ExecSync).
func criSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}

// callTimeout is the gRPC deadline for a runtime-side timeout of secs: later
// by CallMargin, saturating instead of wrapping round to a deadline in the
// past for timeouts near the largest Duration (about 292 years).
func callTimeout(secs int64) time.Duration {
	const maxSecs = int64((math.MaxInt64 - CallMargin) / time.Second)
	if secs > maxSecs {
		return math.MaxInt64
	}
	return time.Duration(secs)*time.Second + CallMargin
}

// StopContainer asks the runtime to stop the container: SIGTERM (or the
// image's stop signal), then SIGKILL after timeout. NotFound means the
// container is already gone, which is what the caller wanted; it returns nil
// and shows up only in the logs and the errors metric (code NotFound).
func (r *remoteRuntime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	secs := criSeconds(timeout)
	within := callTimeout(secs)
	callCtx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	_, err := r.client.StopContainer(callCtx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: secs})
	if status.Code(err) == codes.NotFound {
		klog.FromContext(ctx).V(2).Info("Container already gone, nothing to stop", "containerID", id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("CRI StopContainer %s (timeout %ds): %w", id, secs, noAnswer(ctx, callCtx, err, within))
	}
	return nil
}

// ExecSync runs cmd in the container. The runtime enforces timeout (whole
// seconds, rounded up) and kills the command when it passes; the gRPC
// deadline is later by CallMargin so its error, not ours, is what the caller
// sees. Without a timeout the call is bounded by the call timeout, as every
// call without a deadline of its own. Output is capped at ExecOutputCap
// bytes per stream.
func (r *remoteRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error) {
	secs := criSeconds(timeout)
	within := r.callTimeout
	if secs > 0 {
		within = callTimeout(secs)
	}
	callCtx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	resp, err := r.client.ExecSync(callCtx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
	if err != nil {
		return ExecResult{}, fmt.Errorf("CRI ExecSync in %s (timeout %ds): %w", id, secs, noAnswer(ctx, callCtx, err, within))
	}
	stdout, t1 := capTail(resp.GetStdout(), ExecOutputCap)
	stderr, t2 := capTail(resp.GetStderr(), ExecOutputCap)
	return ExecResult{Stdout: stdout, Stderr: stderr, ExitCode: resp.GetExitCode(), Truncated: t1 || t2}, nil
}

// capTail keeps the last n bytes of b, copied so the (possibly 16 MiB)
// response buffer can be freed.
func capTail(b []byte, n int) ([]byte, bool) {
	if len(b) <= n {
		return b, false
	}
	return append([]byte(nil), b[len(b)-n:]...), true
}
