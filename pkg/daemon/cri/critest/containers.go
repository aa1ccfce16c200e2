package critest

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Exit codes of a container stopped by a signal (128 + signal number).
const (
	ExitSIGTERM int32 = 143
	ExitSIGKILL int32 = 137
)

// Container is one container in the fake's table. Pod and container names
// become the kubelet's labels and RestartCount its annotation; Labels and
// Annotations override them, NoRestartCount drops the annotation.
type Container struct {
	ID, SandboxID                 string
	PodUID, PodNamespace, PodName string
	Name                          string
	Attempt                       uint32
	RestartCount                  int
	State                         runtimeapi.ContainerState
	CreatedAt, StartedAt          time.Time
	FinishedAt                    time.Time
	ExitCode                      int32
	// Labels and Annotations are added over the generated kubelet ones.
	Labels, Annotations map[string]string
	// NoRestartCount leaves the restart-count annotation out.
	NoRestartCount bool
	// Info is what a verbose ContainerStatus answers in its info map (a
	// runtime's own JSON, e.g. containerd's under "info"); a call without
	// verbose gets none, as from a real runtime.
	Info map[string]string

	// StopExitCode is the exit code after a stop the container honours
	// (zero means ExitSIGTERM).
	StopExitCode int32
	// IgnoreSIGTERM makes StopContainer wait out the whole timeout (or the
	// caller's deadline) and end with ExitSIGKILL, like a PID 1 that ignores
	// SIGTERM.
	IgnoreSIGTERM bool
}

// StopCall records one StopContainer call.
type StopCall struct {
	ID      string
	Timeout int64 // seconds, as sent
	// Deadline is how long the caller's gRPC deadline left when the call
	// arrived; zero when it had none.
	Deadline time.Duration
}

// ExecCall records one ExecSync call.
type ExecCall struct {
	ID       string
	Cmd      []string
	Timeout  int64 // seconds, as sent
	Deadline time.Duration
}

// ExecScript is what ExecSync answers for a container.
type ExecScript struct {
	Stdout, Stderr []byte
	ExitCode       int32
	// Err, when set, is returned instead of a response.
	Err error
	// Hang blocks the call until the request's timeout (answered as the
	// runtime would: DeadlineExceeded) or the caller gives up.
	Hang bool
}

// containerTable is the fake's state; its zero value is ready to use.
type containerTable struct {
	mu         sync.Mutex
	containers map[string]*Container
	callErrs   map[string]error
	stops      []StopCall
	execs      []ExecCall
	scripts    map[string]ExecScript
	hangStop   bool
	onCall     func(method, id string)
	// held are the methods HangCall holds, each until its channel closes.
	held map[string]chan struct{}
}

// AddContainer puts c in the table (replacing one with the same ID).
func (f *FakeRuntime) AddContainer(c Container) {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.containers == nil {
		t.containers = map[string]*Container{}
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	t.containers[c.ID] = &c
}

// DeleteContainer deletes a container, as the kubelet's garbage collector would.
func (f *FakeRuntime) DeleteContainer(id string) {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.containers, id)
}

// GetContainer returns a copy of the container's current record.
func (f *FakeRuntime) GetContainer(id string) (Container, bool) {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.containers[id]
	if !ok {
		return Container{}, false
	}
	return *c, true
}

// SetCallError makes every call of a CRI method ("ListContainers",
// "ContainerStatus", "StopContainer", "ExecSync") fail with err; nil clears it.
func (f *FakeRuntime) SetCallError(method string, err error) {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.callErrs == nil {
		t.callErrs = map[string]error{}
	}
	t.callErrs[method] = err
}

// SetExecScript sets what ExecSync answers in container id.
func (f *FakeRuntime) SetExecScript(id string, s ExecScript) {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.scripts == nil {
		t.scripts = map[string]ExecScript{}
	}
	t.scripts[id] = s
}

// HangStop makes StopContainer block until the caller gives up: a runtime
// stuck stopping a container.
func (f *FakeRuntime) HangStop(hang bool) {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hangStop = hang
}

// OnCall sets a function called (outside the fake's lock) when a container
// call arrives, before it is answered: tests use it to learn that a call is
// in flight without sleeping.
func (f *FakeRuntime) OnCall(fn func(method, id string)) {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onCall = fn
}

// StopCalls returns the StopContainer calls so far.
func (f *FakeRuntime) StopCalls() []StopCall {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.stops)
}

// ExecCalls returns the ExecSync calls so far.
func (f *FakeRuntime) ExecCalls() []ExecCall {
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.execs)
}

// HangCall makes every call of a CRI method block without an answer until
// the caller gives up (hang true), or lets the held calls and later ones go
// on (hang false): a runtime that accepts calls and never answers them.
// Container methods ("ListContainers", "ContainerStatus", "StopContainer",
// "ExecSync") are held here; "Version" is Hang; image methods
// ("PullImage", "ImageStatus", "ListImages", "RemoveImage") are held by
// the image service.
func (f *FakeRuntime) HangCall(method string, hang bool) {
	switch method {
	case "Version":
		f.Hang(hang)
		return
	case "PullImage", "ImageStatus", "ListImages", "RemoveImage":
		f.images.HangCall(method, hang)
		return
	}
	t := &f.table
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held = holdCall(t.held, method, hang)
}

// holdCall adds a hold of method to held, or releases it.
func holdCall(held map[string]chan struct{}, method string, hang bool) map[string]chan struct{} {
	ch, ok := held[method]
	switch {
	case hang && !ok:
		if held == nil {
			held = map[string]chan struct{}{}
		}
		held[method] = make(chan struct{})
	case !hang && ok:
		close(ch)
		delete(held, method)
	}
	return held
}

// waitHeld blocks while hold (which may be nil) is not closed, or until the
// caller gives up.
func waitHeld(ctx context.Context, hold chan struct{}) error {
	if hold == nil {
		return nil
	}
	select {
	case <-hold:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// begin runs the common prologue of a container call: the hook, a hold
// and the injected error.
func (t *containerTable) begin(ctx context.Context, method, id string) error {
	t.mu.Lock()
	fn, err, hold := t.onCall, t.callErrs[method], t.held[method]
	t.mu.Unlock()
	if fn != nil {
		fn(method, id)
	}
	if herr := waitHeld(ctx, hold); herr != nil {
		return herr
	}
	return err
}

func remaining(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return 0
}

func (c *Container) labels() map[string]string {
	l := map[string]string{
		"io.kubernetes.pod.uid":        c.PodUID,
		"io.kubernetes.pod.namespace":  c.PodNamespace,
		"io.kubernetes.pod.name":       c.PodName,
		"io.kubernetes.container.name": c.Name,
	}
	maps.Copy(l, c.Labels)
	return l
}

func (c *Container) annotations() map[string]string {
	a := map[string]string{}
	if !c.NoRestartCount {
		a["io.kubernetes.container.restartCount"] = strconv.Itoa(c.RestartCount)
	}
	maps.Copy(a, c.Annotations)
	return a
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// matches applies a CRI ContainerFilter the way runtimes do: every set
// field must match, labels by exact value.
func (c *Container) matches(f *runtimeapi.ContainerFilter) bool {
	if f == nil {
		return true
	}
	if f.GetId() != "" && f.GetId() != c.ID {
		return false
	}
	if f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.SandboxID {
		return false
	}
	if f.GetState() != nil && f.GetState().GetState() != c.State {
		return false
	}
	l := c.labels()
	for k, v := range f.GetLabelSelector() {
		if l[k] != v {
			return false
		}
	}
	return true
}

// ListContainers implements runtimeapi.RuntimeServiceServer.
func (f *FakeRuntime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	t := &f.table
	if err := t.begin(ctx, "ListContainers", ""); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	resp := &runtimeapi.ListContainersResponse{}
	for _, id := range slices.Sorted(maps.Keys(t.containers)) {
		c := t.containers[id]
		if !c.matches(req.GetFilter()) {
			continue
		}
		resp.Containers = append(resp.Containers, &runtimeapi.Container{
			Id:           c.ID,
			PodSandboxId: c.SandboxID,
			Metadata:     &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
			State:        c.State,
			CreatedAt:    nanos(c.CreatedAt),
			Labels:       c.labels(),
			Annotations:  c.annotations(),
		})
	}
	return resp, nil
}

// ContainerStatus implements runtimeapi.RuntimeServiceServer.
func (f *FakeRuntime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	t := &f.table
	if err := t.begin(ctx, "ContainerStatus", req.GetContainerId()); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.containers[req.GetContainerId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q: not found", req.GetContainerId())
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id:          c.ID,
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
		State:       c.State,
		CreatedAt:   nanos(c.CreatedAt),
		StartedAt:   nanos(c.StartedAt),
		FinishedAt:  nanos(c.FinishedAt),
		ExitCode:    c.ExitCode,
		Labels:      c.labels(),
		Annotations: c.annotations(),
	}}
	if req.GetVerbose() {
		resp.Info = maps.Clone(c.Info)
	}
	return resp, nil
}

// StopContainer implements runtimeapi.RuntimeServiceServer.
func (f *FakeRuntime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	t := &f.table
	id := req.GetContainerId()
	if err := t.begin(ctx, "StopContainer", id); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.stops = append(t.stops, StopCall{ID: id, Timeout: req.GetTimeout(), Deadline: remaining(ctx)})
	c, ok := t.containers[id]
	hang := t.hangStop
	var ignoreTerm bool
	if ok {
		ignoreTerm = c.IgnoreSIGTERM && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	t.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q: not found", id)
	}
	if hang {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	exit := c.StopExitCode
	if exit == 0 {
		exit = ExitSIGTERM
	}
	if ignoreTerm {
		timer := time.NewTimer(time.Duration(req.GetTimeout()) * time.Second)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		exit = ExitSIGKILL
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.containers[id]; ok && c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		c.FinishedAt = time.Now()
		c.ExitCode = exit
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// ExecSync implements runtimeapi.RuntimeServiceServer.
func (f *FakeRuntime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	t := &f.table
	id := req.GetContainerId()
	if err := t.begin(ctx, "ExecSync", id); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.execs = append(t.execs, ExecCall{ID: id, Cmd: slices.Clone(req.GetCmd()), Timeout: req.GetTimeout(), Deadline: remaining(ctx)})
	c, ok := t.containers[id]
	var state runtimeapi.ContainerState
	if ok {
		state = c.State
	}
	script := t.scripts[id]
	t.mu.Unlock()
	switch {
	case !ok:
		return nil, status.Errorf(codes.NotFound, "container %q: not found", id)
	case state != runtimeapi.ContainerState_CONTAINER_RUNNING:
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", id)
	}
	if script.Hang {
		var expired <-chan time.Time
		if req.GetTimeout() > 0 {
			timer := time.NewTimer(time.Duration(req.GetTimeout()) * time.Second)
			defer timer.Stop()
			expired = timer.C
		}
		select {
		case <-expired:
			return nil, status.Errorf(codes.DeadlineExceeded, "timeout %ds exceeded", req.GetTimeout())
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	if script.Err != nil {
		return nil, script.Err
	}
	return &runtimeapi.ExecSyncResponse{Stdout: script.Stdout, Stderr: script.Stderr, ExitCode: script.ExitCode}, nil
}
