package rollout

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/kubectl/pkg/describe"
)

// printAs prints obj as kubectl does after an operation: with -o, the
// object in that format; without, "KIND.GROUP/NAME OPERATION".
func printAs(flags *genericclioptions.PrintFlags, t target, obj runtime.Object, operation string, out io.Writer) error {
	obj.GetObjectKind().SetGroupVersionKind(t.kind.gvk)
	flags.NamePrintFlags.Operation = operation
	printer, err := flags.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(obj, out)
}

// describeTemplate is a pod template as `kubectl rollout history --revision`
// shows it.
func describeTemplate(template *corev1.PodTemplateSpec) string {
	var buf bytes.Buffer
	describe.DescribePodTemplate(template, describe.NewPrefixWriter(&buf))
	return buf.String()
}

// historyTable is the REVISION / CHANGE-CAUSE table of kubectl.
func historyTable(revisions []*appsv1.ControllerRevision) string {
	if len(revisions) == 0 {
		return "No rollout history found."
	}
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintf(w, "REVISION\tCHANGE-CAUSE\n")
	for _, r := range revisions {
		cause := r.Annotations["kubernetes.io/change-cause"]
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(w, "%d\t%s\n", r.Revision, cause)
	}
	w.Flush()
	return buf.String()
}
