package kruisekinds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	kubectlscheme "k8s.io/kubectl/pkg/scheme"
)

// Factory is f for kubectl's commands that patch kruise objects. kubectl
// patches with a strategic merge patch, which the API server refuses for
// custom resources; through this Factory such a patch to a kruise object
// is applied here, with the kruise type's merge keys as kubectl meant it,
// and sent as a JSON merge patch of what changed, guarded by the object's
// resourceVersion so that a concurrent write fails as a conflict instead
// of being overwritten.
func Factory(f cmdutil.Factory) cmdutil.Factory {
	return factory{Factory: f, getter: getter{f}}
}

type factory struct {
	cmdutil.Factory
	getter getter
}

func (f factory) NewBuilder() *resource.Builder       { return resource.NewBuilder(f.getter) }
func (f factory) ToRESTConfig() (*rest.Config, error) { return f.getter.ToRESTConfig() }

type getter struct {
	genericclioptions.RESTClientGetter
}

func (g getter) ToRESTConfig() (*rest.Config, error) {
	config, err := g.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	config = rest.CopyConfig(config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return smpToMerge{next: rt} })
	return config, nil
}

// smpToMerge turns a strategic merge patch to a kruise object into a merge patch.
type smpToMerge struct{ next http.RoundTripper }

func (t smpToMerge) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPatch || req.Header.Get("Content-Type") != string(types.StrategicMergePatchType) ||
		!strings.Contains(req.URL.Path, ".kruise.io/") {
		return t.next.RoundTrip(req)
	}
	smp, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	get := req.Clone(req.Context())
	get.Method, get.Body, get.ContentLength = http.MethodGet, nil, 0
	get.Header.Del("Content-Type")
	get.URL.RawQuery = ""
	resp, err := t.next.RoundTrip(get)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	current, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	merge, err := MergePatchFor(current, smp)
	if err != nil {
		return nil, err
	}
	patch := req.Clone(req.Context())
	patch.Header.Set("Content-Type", string(types.MergePatchType))
	patch.Body = io.NopCloser(bytes.NewReader(merge))
	patch.ContentLength = int64(len(merge))
	patch.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(merge)), nil }
	return t.next.RoundTrip(patch)
}

// MergePatchFor applies the strategic merge patch smp to the kruise object
// current (JSON) with its Go type's merge keys, and returns the JSON merge
// patch from current to the result, carrying current's resourceVersion.
func MergePatchFor(current, smp []byte) ([]byte, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(current, &meta); err != nil {
		return nil, fmt.Errorf("reading the object to patch: %w", err)
	}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		return nil, err
	}
	typed, err := kubectlscheme.Scheme.New(gv.WithKind(meta.Kind))
	if err != nil {
		return nil, fmt.Errorf("no Go type for %s %s to apply kubectl's patch with: %w", meta.APIVersion, meta.Kind, err)
	}
	patched, err := strategicpatch.StrategicMergePatch(current, smp, typed)
	if err != nil {
		return nil, fmt.Errorf("applying kubectl's patch to %s: %w", meta.Kind, err)
	}
	merge, err := jsonpatch.CreateMergePatch(current, patched)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(merge, &m); err != nil {
		return nil, err
	}
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		m["metadata"] = md
	}
	md["resourceVersion"] = meta.Metadata.ResourceVersion
	return json.Marshal(m)
}
