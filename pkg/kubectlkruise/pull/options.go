package pull

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// Complete reads the image, the namespace and the client.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	o.Image = args[0]
	var err error
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.DryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return err
	}
	o.printObject = printer.PrintObj
	o.Kruise, err = cliutil.KruiseClientset(f)
	return err
}

// Validate checks the flags: exactly one way of choosing nodes.
func (o *Options) Validate() error {
	if o.Image == "" {
		return errors.New("give the image to pull, e.g. registry.example.com/app:v2")
	}
	chosen := 0
	for _, set := range []bool{len(o.Nodes) > 0, o.Selector != "", o.AllNodes} {
		if set {
			chosen++
		}
	}
	if chosen != 1 {
		return errors.New("choose the nodes with exactly one of --nodes NODE,..., --selector KEY=VALUE or --all-nodes")
	}
	if o.Selector != "" {
		if _, err := metav1.ParseToLabelSelector(o.Selector); err != nil {
			return fmt.Errorf("--selector %q is not a label selector: %w", o.Selector, err)
		}
	}
	if o.Parallelism < 0 {
		return fmt.Errorf("--parallelism must not be negative, not %d", o.Parallelism)
	}
	if o.Wait && o.DryRun != cmdutil.DryRunNone {
		return errors.New("--wait cannot be used with --dry-run: a dry run creates nothing to wait for")
	}
	return nil
}

// Run creates the job, prints it and, with --wait, follows it.
func (o *Options) Run(ctx context.Context) error {
	job, err := o.job()
	if err != nil {
		return err
	}
	job, err = cliutil.Create(ctx, o.DryRun, job, o.Kruise.AppsV1beta1().ImagePullJobs(o.Namespace).Create)
	if err != nil {
		return fmt.Errorf("creating imagepulljob %s/%s for %s: %w", o.Namespace, job.Name, o.Image, err)
	}
	if err := o.printObject(job, o.Out); err != nil {
		return err
	}
	if !o.Wait {
		return nil
	}
	return o.wait(ctx, job)
}
