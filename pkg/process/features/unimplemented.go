package features

// notImplemented is the reason given for an OpenKruise gate kruise has no
// counterpart for.
const notImplemented = "kruise does not implement this OpenKruise gate; it is accepted so that existing --feature-gates strings keep working"

// unimplemented maps the feature gates OpenKruise defines and kruise does not
// implement to why setting them has no effect here. They are accepted, with a
// warning, so that an operator's --feature-gates string written for
// OpenKruise keeps working.
var unimplemented = map[string]string{
	"PodWebhook": "kruise's pod webhook is turned on by --webhook-enabled (the chart's webhook.enabled) and is only called for pods " +
		"that need it (matchConditions); " + notImplemented,
	"DaemonWatchingPod": "kruise-daemon always watches the pods of its own node (spec.nodeName field selector); the gate has nothing to switch",
	"KruisePodReadinessGate": "kruise injects no KruisePodReady readiness gate when pods are created (no pod webhook); " +
		notImplemented,
	"TemplateNoDefaults":                        notImplemented,
	"ForceDeleteTimeoutExpectationGate":         notImplemented,
	"InPlacePodVerticalScaling":                 notImplemented,
	"DefaultHostNetworkHostPortsInPodTemplates": notImplemented,
	"DaemonSetPruneIneligibleNodes":             notImplemented,
}

// Unimplemented reports whether name is an OpenKruise gate kruise accepts and
// ignores, and why.
func Unimplemented(name string) (reason string, ok bool) {
	reason, ok = unimplemented[name]
	return reason, ok
}
