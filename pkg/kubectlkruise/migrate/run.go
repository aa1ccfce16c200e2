package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// Run plans the migration and, unless it is a dry run, carries it out:
// create, wait until ready, scale the old workload down.
func (o *Options) Run(ctx context.Context) error {
	p, err := o.readSource(ctx)
	if err != nil {
		return err
	}
	p.warnings = append(p.warnings, o.autoscalers(ctx, p)...)
	for _, w := range p.warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	if o.DryRun == cmdutil.DryRunClient {
		return o.printObject(p.target, o.Out)
	}
	t := o.targets(p.targetKind)
	current, err := o.createOrResume(ctx, t, p)
	if err != nil || o.DryRun == cmdutil.DryRunServer {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := o.waitReady(waitCtx, t, p, current); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s %s/%s is not ready after %s; %s %s was left as it was. See why with `kubectl kruise describe %s/%s`; run this command again to keep waiting, or delete the %s to give up",
				p.targetResource, o.Namespace, p.targetName, o.Timeout, strings.ToLower(p.kind), p.meta.Name, strings.ToLower(p.targetKind), p.targetName, p.targetKind)
		}
		return err
	}
	if err := o.scaleDown(ctx, p); err != nil {
		return err
	}
	if p.kind == "DaemonSet" {
		fmt.Fprintf(o.Out, "%s/%s now runs on no node (nodeSelector %s=true)\n", p.resource, p.meta.Name, NodeSelectorKey)
	} else {
		fmt.Fprintf(o.Out, "%s/%s scaled to 0\n", p.resource, p.meta.Name)
	}
	fmt.Fprintf(o.Out, "Migrated %s/%s to %s/%s. The %s is kept; delete it when you are satisfied:\n  kubectl delete %s %s -n %s\n",
		strings.ToLower(p.kind), p.meta.Name, strings.ToLower(p.targetKind), p.targetName, p.kind, p.resource, p.meta.Name, o.Namespace)
	return nil
}

// createOrResume creates the new workload, or picks up the one an earlier
// run of the same migration created.
func (o *Options) createOrResume(ctx context.Context, t targets, p *plan) (runtime.Object, error) {
	existing, err := t.get(ctx, p.targetName)
	switch {
	case err == nil:
		m, _ := metaOf(existing)
		from := p.kind + "/" + p.meta.Name
		if m.GetAnnotations()[MigratedFromAnnotation] != from {
			return nil, fmt.Errorf("%s %s/%s already exists and was not made by migrating %s: choose another name with --name", p.targetResource, o.Namespace, p.targetName, strings.ToLower(from))
		}
		fmt.Fprintf(o.Out, "%s/%s exists from an earlier run; waiting for it\n", p.targetResource, p.targetName)
		return existing, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading %s %s/%s: %w", p.targetResource, o.Namespace, p.targetName, err)
	}
	opts := metav1.CreateOptions{DryRun: cliutil.DryRun(o.DryRun)}
	created, err := t.create(ctx, p.target, opts)
	if err != nil {
		return nil, fmt.Errorf("creating %s %s/%s: %w", p.targetResource, o.Namespace, p.targetName, err)
	}
	if err := o.printObject(created, o.Out); err != nil {
		return nil, err
	}
	return created, nil
}
