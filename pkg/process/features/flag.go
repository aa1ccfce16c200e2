package features

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// FlagName is the flag both binaries parse the gates from.
const FlagName = "feature-gates"

// Warning is one gate the flag accepted and ignored: an OpenKruise gate
// kruise does not implement.
type Warning struct {
	Gate   string
	Value  bool
	Reason string
}

// Flag is the pflag.Value of --feature-gates: "Name=true,Other=false", spaces
// around names and values tolerated, the empty string allowed (the Helm chart
// always passes the flag). Names of OpenKruise gates kruise does not
// implement are split out as warnings; the rest are set on the gate, so a
// typo or a value other than true/false is an error. AllAlpha and AllBeta
// work as in the Kubernetes components.
type Flag struct {
	gate featuregate.MutableFeatureGate
	// given holds every name=value accepted so far, ignored ones included.
	given    map[string]bool
	warnings map[string]Warning
}

// NewFlag returns the flag value that sets gate.
func NewFlag(gate featuregate.MutableFeatureGate) *Flag {
	return &Flag{gate: gate, given: map[string]bool{}, warnings: map[string]Warning{}}
}

// Gate returns the gate the flag sets.
func (f *Flag) Gate() featuregate.MutableFeatureGate { return f.gate }

// Set implements pflag.Value. Repeating the flag adds to the earlier values;
// a later value for the same gate wins.
func (f *Flag) Set(value string) error {
	pairs, err := parsePairs(value)
	if err != nil {
		return err
	}
	known := f.gate.GetAll()
	apply := map[string]bool{}
	warnings := map[string]Warning{}
	var unknown []string
	for _, p := range pairs {
		if _, ok := known[featuregate.Feature(p.name)]; ok {
			apply[p.name] = p.value
			continue
		}
		if reason, ok := Unimplemented(p.name); ok {
			warnings[p.name] = Warning{Gate: p.name, Value: p.value, Reason: reason}
			continue
		}
		unknown = append(unknown, p.name)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown feature gate %s; kruise's gates are %s (OpenKruise's other gate names are accepted and ignored)",
			strings.Join(unknown, ", "), strings.Join(knownNames(known), ", "))
	}
	// The gate's AllAlpha and AllBeta only fill the gates it has no value
	// for, and an earlier AllBeta filled them all: set the gates of their
	// stage named neither now nor before, so that a later AllBeta wins.
	for name, spec := range known {
		_, now := apply[string(name)]
		_, before := f.given[string(name)]
		if now || before || name == "AllAlpha" || name == "AllBeta" {
			continue
		}
		var stage string
		switch spec.PreRelease {
		case featuregate.Alpha:
			stage = "AllAlpha"
		case featuregate.Beta:
			stage = "AllBeta"
		}
		if v, ok := apply[stage]; ok {
			apply[string(name)] = v
		}
	}
	if err := f.gate.SetFromMap(apply); err != nil {
		return fmt.Errorf("setting feature gates: %w", err)
	}
	for _, p := range pairs {
		f.given[p.name] = p.value
	}
	for name, w := range warnings {
		f.warnings[name] = w
	}
	return nil
}

// String implements pflag.Value: the pairs given, sorted by name.
func (f *Flag) String() string {
	out := make([]string, 0, len(f.given))
	for name, v := range f.given {
		out = append(out, fmt.Sprintf("%s=%t", name, v))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Type implements pflag.Value.
func (f *Flag) Type() string { return "mapStringBool" }

// Usage is the flag's help text.
func (f *Flag) Usage() string {
	return "Comma-separated Name=true|false pairs that turn kruise's feature gates on or off, with OpenKruise's gate names. " +
		"The names of OpenKruise gates kruise does not implement (e.g. PodWebhook, DaemonWatchingPod) are accepted and ignored with a warning; " +
		"any other unknown name is an error. Gates:\n" + strings.Join(f.gate.KnownFeatures(), "\n")
}

// Warnings returns the ignored gates, sorted by name.
func (f *Flag) Warnings() []Warning {
	out := make([]Warning, 0, len(f.warnings))
	for _, w := range f.warnings {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gate < out[j].Gate })
	return out
}

// Log writes one line per ignored gate and one with the effective gates. Call
// it once logging is configured.
func (f *Flag) Log(logger klog.Logger) {
	for _, w := range f.Warnings() {
		logger.Info("Warning: ignoring a feature gate kruise does not implement", "gate", w.Gate, "value", w.Value, "reason", w.Reason)
	}
	logger.Info("Feature gates", "featureGates", Effective(f.gate))
}

// Effective returns whether each of kruise's gates is enabled in g.
func Effective(g featuregate.FeatureGate) map[string]bool {
	out := make(map[string]bool, len(specs))
	for name := range specs {
		out[string(name)] = g.Enabled(name)
	}
	return out
}

type pair struct {
	name  string
	value bool
}

// parsePairs splits "A=true, B = false" into pairs; empty items are skipped.
func parsePairs(value string) ([]pair, error) {
	var out []pair
	for _, item := range strings.Split(value, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		name, val, found := strings.Cut(item, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		switch {
		case name == "":
			return nil, fmt.Errorf("feature gate %q has no name", strings.TrimSpace(item))
		case !found:
			return nil, fmt.Errorf("feature gate %s has no value: write %s=true or %s=false", name, name, name)
		}
		var b bool
		switch strings.ToLower(val) {
		case "true":
			b = true
		case "false":
			b = false
		default:
			return nil, fmt.Errorf("feature gate %s has value %q: want true or false", name, val)
		}
		out = append(out, pair{name: name, value: b})
	}
	return out, nil
}

// knownNames lists the gate names of known, AllAlpha and AllBeta included, sorted.
func knownNames(known map[featuregate.Feature]featuregate.FeatureSpec) []string {
	out := make([]string, 0, len(known))
	for name := range known {
		out = append(out, string(name))
	}
	sort.Strings(out)
	return out
}
