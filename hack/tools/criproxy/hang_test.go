package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ownComm is this test process's name, as the proxy sees its client.
func ownComm(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	return strings.TrimSpace(string(raw))
}

// setHang writes the hang file and waits until the proxy has it in force.
func setHang(t *testing.T, file string, rules *hangRules) {
	t.Helper()
	applied := file + ".applied"
	if rules == nil {
		require.NoError(t, os.Remove(file))
		require.Eventually(t, func() bool {
			_, err := os.Stat(applied)
			return errors.Is(err, fs.ErrNotExist)
		}, 5*time.Second, 10*time.Millisecond, "the proxy never released the calls")
		return
	}
	raw, err := json.Marshal(rules)
	require.NoError(t, err)
	require.NoError(t, writeFileAtomic(file, raw))
	require.Eventually(t, func() bool {
		got, err := os.ReadFile(applied)
		return err == nil && string(got) == string(raw)
	}, 5*time.Second, 10*time.Millisecond, "the proxy never applied %s", raw)
}

func TestHangHoldsChosenMethodsOfChosenClients(t *testing.T) {
	var hangFile string
	e := newEnv(t, func(dir string, c *config) {
		hangFile = filepath.Join(dir, "hang.json")
		c.hangFile = hangFile
	})
	var listed atomic.Int32
	e.fake.OnCall(func(method, _ string) {
		if method == "ListContainers" {
			listed.Add(1)
		}
	})
	ctx := context.Background()
	_, err := e.rt.PodContainers(ctx, "uid-a")
	require.NoError(t, err)
	require.EqualValues(t, 1, listed.Load())

	// Another client's calls are held: ours go on.
	setHang(t, hangFile, &hangRules{Methods: []string{"ListContainers"}, Clients: []string{"kruise-daemon"}})
	_, err = e.rt.PodContainers(ctx, "uid-a")
	require.NoError(t, err)
	require.EqualValues(t, 2, listed.Load())

	// Our ListContainers is held without an answer, and never reaches the
	// runtime; other methods go on.
	setHang(t, hangFile, &hangRules{Methods: []string{"/runtime.v1.RuntimeService/ListContainers"}, Clients: []string{ownComm(t)}})
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, err = e.rt.PodContainers(short, "uid-a")
	cancel()
	require.Error(t, err)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.EqualValues(t, 2, listed.Load(), "a held call is not forwarded")
	_, err = e.rt.Version(ctx)
	require.NoError(t, err, "methods not named are forwarded")

	// A held call goes on once released.
	done := make(chan error, 1)
	go func() {
		_, err := e.rt.PodContainers(ctx, "uid-a")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the call was answered while held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	setHang(t, hangFile, nil)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the held call was not released")
	}
	assert.EqualValues(t, 3, listed.Load())
}

func TestHangEveryMethodAndBadFile(t *testing.T) {
	var hangFile string
	e := newEnv(t, func(dir string, c *config) {
		hangFile = filepath.Join(dir, "hang.json")
		c.hangFile = hangFile
		// Left by an earlier run: not in force.
		require.NoError(t, os.WriteFile(hangFile+".applied", []byte(`{}`), 0o644))
	})
	ctx := context.Background()
	gone := func(path string) func() bool {
		return func() bool {
			_, err := os.Stat(path)
			return errors.Is(err, fs.ErrNotExist)
		}
	}
	require.Eventually(t, gone(hangFile+".applied"), 5*time.Second, 10*time.Millisecond, "a stale .applied is removed at start")

	// No methods named: every method of the client is held.
	setHang(t, hangFile, &hangRules{Clients: []string{ownComm(t)}})
	for _, call := range []func(context.Context) error{
		func(ctx context.Context) error { _, err := e.rt.Version(ctx); return err },
		func(ctx context.Context) error { _, _, err := e.rt.ImageStatus(ctx, "busybox"); return err },
	} {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := call(short)
		cancel()
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
	}

	// A file that does not parse holds nothing.
	require.NoError(t, writeFileAtomic(hangFile, []byte("{not json")))
	require.Eventually(t, func() bool {
		got, err := os.ReadFile(hangFile + ".applied")
		return err == nil && string(got) == "{not json"
	}, 5*time.Second, 10*time.Millisecond)
	_, err := e.rt.Version(ctx)
	require.NoError(t, err)
}

func TestHangRulesMatch(t *testing.T) {
	d := client{pid: 1, comm: "kruise-daemon"}
	k := client{pid: 2, comm: "kubelet"}
	const list = "/runtime.v1.RuntimeService/ListContainers"
	for _, tc := range []struct {
		rules *hangRules
		c     client
		want  bool
	}{
		{nil, d, false},
		{&hangRules{}, d, true},
		{&hangRules{}, k, true},
		{&hangRules{Clients: []string{"kruise-daemon"}}, k, false},
		{&hangRules{Methods: []string{"ListContainers"}}, d, true},
		{&hangRules{Methods: []string{list}}, d, true},
		{&hangRules{Methods: []string{"Version"}}, d, false},
		{&hangRules{Methods: []string{"ListContainers"}, Clients: []string{"kruise-daemon"}}, k, false},
	} {
		assert.Equal(t, tc.want, tc.rules.holds(list, tc.c, ""), "%+v %v", tc.rules, tc.c)
	}
}

func TestHangRulesMatchPodNamespaces(t *testing.T) {
	k := client{pid: 2, comm: "kubelet"}
	const create = "/runtime.v1.RuntimeService/CreateContainer"
	rules := &hangRules{Methods: []string{"CreateContainer"}, Clients: []string{"kubelet"}, PodNamespaces: []string{"mine"}}
	assert.True(t, rules.holds(create, k, "mine"))
	assert.False(t, rules.holds(create, k, "theirs"), "another namespace's pod")
	assert.False(t, rules.holds(create, k, ""), "a call about no pod")
	assert.True(t, (&hangRules{}).holds(create, k, "theirs"), "no namespaces: every call")
}

func TestHangFileAnyOfHoldsWhatAnyRuleHolds(t *testing.T) {
	k := client{pid: 2, comm: "kubelet"}
	const create = "/runtime.v1.RuntimeService/CreateContainer"
	var f hangFile
	require.NoError(t, json.Unmarshal([]byte(`{"anyOf":[`+
		`{"methods":["CreateContainer"],"clients":["kubelet"],"podNamespaces":["a"]},`+
		`{"methods":["CreateContainer"],"clients":["kubelet"],"podNamespaces":["b"]}]}`), &f))
	assert.True(t, f.holds(create, k, "a"))
	assert.True(t, f.holds(create, k, "b"))
	assert.False(t, f.holds(create, k, "c"), "a namespace no rule names")

	var none hangFile
	require.NoError(t, json.Unmarshal([]byte(`{"anyOf":[]}`), &none))
	assert.False(t, none.holds(create, k, "a"), "an empty list holds nothing, unlike an empty rule")
	var single hangFile
	require.NoError(t, json.Unmarshal([]byte(`{"clients":["kubelet"]}`), &single))
	assert.True(t, single.holds(create, k, "a"), "a file of one rule as before")
}

func TestPodNamespaceOf(t *testing.T) {
	encode := func(m proto.Message) *frame {
		raw, err := proto.Marshal(m)
		require.NoError(t, err)
		return &frame{data: raw}
	}
	meta := &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "mine"}
	assert.Equal(t, "mine", podNamespaceOf("/runtime.v1.RuntimeService/CreateContainer",
		encode(&runtimeapi.CreateContainerRequest{PodSandboxId: "s", SandboxConfig: &runtimeapi.PodSandboxConfig{Metadata: meta}})))
	assert.Equal(t, "mine", podNamespaceOf("/runtime.v1.RuntimeService/RunPodSandbox",
		encode(&runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: meta}})))
	assert.Equal(t, "", podNamespaceOf("/runtime.v1.RuntimeService/ListContainers", encode(&runtimeapi.ListContainersRequest{})))
	assert.Equal(t, "", podNamespaceOf("/runtime.v1.RuntimeService/CreateContainer", &frame{data: []byte{0xff, 0xff}}), "garbage")
	assert.Equal(t, "", podNamespaceOf("/runtime.v1.RuntimeService/CreateContainer", nil))
}
