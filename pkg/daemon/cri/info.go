package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// VerboseInfoKey is the key of the info map under which containerd and
// CRI-O answer a verbose ContainerStatus with one JSON document.
const VerboseInfoKey = "info"

// Where CreatedEnv read a container's environment from.
const (
	// EnvFromCRIConfig is containerd's "config.envs": the CRI
	// ContainerConfig the kubelet sent, so exactly the kubelet's env
	// (downward API values, service links), without the image's.
	EnvFromCRIConfig = "config.envs"
	// EnvFromOCISpec is "runtimeSpec.process.env" (containerd and CRI-O):
	// the OCI spec the process was started with, the image's env merged
	// under the kubelet's (both runtimes let the kubelet's value win).
	EnvFromOCISpec = "runtimeSpec.process.env"
)

var (
	// ErrNoVerboseInfo marks a runtime that answered a verbose
	// ContainerStatus without the info document (cri-dockerd, or a
	// runtime that left it out).
	ErrNoVerboseInfo = errors.New("the runtime's verbose container status has no " + VerboseInfoKey + " document")
	// ErrNoEnvInInfo marks an info document with neither config.envs nor
	// runtimeSpec.process.env in it.
	ErrNoEnvInInfo = errors.New("the runtime's verbose container info holds no environment (neither " +
		EnvFromCRIConfig + " nor " + EnvFromOCISpec + ")")
)

// ContainerInfo is one container instance as a verbose ContainerStatus
// shows it.
type ContainerInfo struct {
	ID    string
	Name  string
	State ContainerState
	// Verbose is the runtime's extra information, the response's info map.
	Verbose map[string]string
}

// ContainerInfo asks the runtime for the status of container id with
// verbose set. It reads what the container was created with; nothing runs
// in the container. A container the runtime does not know comes back as
// a gRPC NotFound status in the error chain.
func (r *remoteRuntime) ContainerInfo(ctx context.Context, id string) (ContainerInfo, error) {
	callCtx, cancel := r.bounded(ctx)
	defer cancel()
	resp, err := r.client.ContainerStatus(callCtx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return ContainerInfo{}, fmt.Errorf("CRI ContainerStatus (verbose) of %s: %w", id, noAnswer(ctx, callCtx, err, r.callTimeout))
	}
	st := resp.GetStatus()
	if st == nil {
		return ContainerInfo{}, fmt.Errorf("CRI ContainerStatus (verbose) of %s: empty status", id)
	}
	name := st.GetLabels()[LabelContainerName]
	if name == "" {
		name = st.GetMetadata().GetName()
	}
	return ContainerInfo{ID: st.GetId(), Name: name, State: stateFromCRI(st.GetState()), Verbose: resp.GetInfo()}, nil
}

// CreatedEnv is the environment a container was created with, as its
// runtime recorded it.
type CreatedEnv struct {
	vars map[string]string
	// Source is EnvFromCRIConfig or EnvFromOCISpec.
	Source string
}

// Lookup returns the value of name and whether the container has it.
func (e CreatedEnv) Lookup(name string) (string, bool) {
	v, ok := e.vars[name]
	return v, ok
}

// verboseInfo is the part of containerd's and CRI-O's info document that
// holds the environment. containerd (1.6 to 2.x, internal/cri/server and
// pkg/daemon/cri/server container_status.go) writes
// {"config": <CRI ContainerConfig>, "runtimeSpec": <OCI spec>, ...}; CRI-O
// (server/container_status.go) writes only {"runtimeSpec": ..., ...}.
type verboseInfo struct {
	Config *struct {
		Envs []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"envs"`
	} `json:"config"`
	RuntimeSpec *struct {
		Process *struct {
			Env []string `json:"env"`
		} `json:"process"`
	} `json:"runtimeSpec"`
}

// CreatedEnv reads the environment the container was created with from its
// verbose info: containerd's CRI config when it is there (the kubelet's env
// and nothing else), else the OCI spec's process env.
func (c ContainerInfo) CreatedEnv() (CreatedEnv, error) {
	doc, ok := c.Verbose[VerboseInfoKey]
	if !ok || doc == "" {
		return CreatedEnv{}, ErrNoVerboseInfo
	}
	var info verboseInfo
	if err := json.Unmarshal([]byte(doc), &info); err != nil {
		return CreatedEnv{}, fmt.Errorf("decoding the runtime's verbose container info: %w", err)
	}
	switch {
	case info.Config != nil:
		vars := make(map[string]string, len(info.Config.Envs))
		for _, kv := range info.Config.Envs {
			// A later entry replaces an earlier one, as when containerd
			// builds the process env from this list.
			vars[kv.Key] = kv.Value
		}
		return CreatedEnv{vars: vars, Source: EnvFromCRIConfig}, nil
	case info.RuntimeSpec != nil && info.RuntimeSpec.Process != nil:
		vars := make(map[string]string, len(info.RuntimeSpec.Process.Env))
		for _, kv := range info.RuntimeSpec.Process.Env {
			k, v, _ := strings.Cut(kv, "=")
			if _, seen := vars[k]; !seen {
				// The first one is what getenv finds.
				vars[k] = v
			}
		}
		return CreatedEnv{vars: vars, Source: EnvFromOCISpec}, nil
	default:
		return CreatedEnv{}, ErrNoEnvInInfo
	}
}
