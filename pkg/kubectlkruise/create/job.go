package create

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	kubectlcreate "k8s.io/kubectl/pkg/cmd/create"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// JobOptions are the flags and clients of one `create job`.
type JobOptions struct {
	PrintFlags *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	// Name is the job's; From is --from, Image --image (kubectl's).
	Name, From, Image string
	// Command follows `--`: kubectl's, refused with --from.
	Command      []string
	FieldManager string

	Namespace  string
	DryRun     cmdutil.DryRunStrategy
	Validation string
	SaveConfig bool
	Kube       kubernetes.Interface
	Kruise     versioned.Interface

	printObject func(runtime.Object, io.Writer) error
	// now is handed to the job builder; replaced in tests.
	now func() time.Time
}

// NewJobOptions are the defaults of the flags.
func NewJobOptions(streams genericiooptions.IOStreams) *JobOptions {
	return &JobOptions{
		PrintFlags: genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme),
		IOStreams:  streams,
		now:        time.Now,
	}
}

// acjName is the AdvancedCronJob a --from value names, and whether it
// names one: acj/NAME, advancedcronjob(s)/NAME, optionally with the group.
func acjName(from string) (string, bool) {
	kind, name, found := strings.Cut(from, "/")
	if !found {
		return "", false
	}
	switch strings.TrimSuffix(strings.ToLower(kind), ".apps.kruise.io") {
	case "acj", "advancedcronjob", "advancedcronjobs":
		return name, true
	}
	return "", false
}

// runE runs the AdvancedCronJob path's steps.
func (o *JobOptions) runE(f cmdutil.Factory) func(*cobra.Command, []string) error {
	return cliutil.RunE(f, o)
}

// kubectl hands --image and --from=cronjob/NAME to kubectl's create job,
// with this command's flags (the same names, so kubectl reads them).
func (o *JobOptions) kubectl(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	k := kubectlcreate.NewCreateJobOptions(o.IOStreams)
	k.PrintFlags = o.PrintFlags
	k.Image, k.From, k.FieldManager = o.Image, o.From, o.FieldManager
	if err := k.Complete(f, cmd, args); err != nil {
		return err
	}
	if err := k.Validate(); err != nil {
		return err
	}
	return k.Run()
}

// Complete reads NAME, the namespace, the dry run, the printer and the
// clients.
func (o *JobOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	name, err := kubectlcreate.NameFromCommandArgs(cmd, args)
	if err != nil {
		return err
	}
	o.Name, o.Command = name, args[1:]
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	if o.Validation, err = cmdutil.GetValidationDirective(cmd); err != nil {
		return err
	}
	o.SaveConfig = cmdutil.GetFlagBool(cmd, cmdutil.ApplyAnnotationsFlag)
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.DryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return err
	}
	o.printObject = printer.PrintObj
	o.Kube, o.Kruise, err = cliutil.Clientsets(f)
	return err
}

// Validate refuses what kubectl create job refuses with --from.
func (o *JobOptions) Validate() error {
	if name, _ := acjName(o.From); name == "" {
		return fmt.Errorf("--from=%s names no AdvancedCronJob: give it as acj/NAME", o.From)
	}
	if o.Image != "" {
		return errors.New("either --image or --from must be specified, not both")
	}
	if len(o.Command) > 0 {
		return errors.New("cannot specify --from and a command: the job runs the template's")
	}
	return nil
}

// Run reads the AdvancedCronJob, builds its job, creates it (unless a
// client dry run) and prints it.
func (o *JobOptions) Run(ctx context.Context) error {
	name, _ := acjName(o.From)
	acj, err := o.Kruise.AppsV1beta1().AdvancedCronJobs(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("advancedcronjob %s/%s not found: list them with `kubectl get acj -n %s`", o.Namespace, name, o.Namespace)
	}
	if err != nil {
		return fmt.Errorf("reading advancedcronjob %s/%s: %w", o.Namespace, name, err)
	}
	job, err := ManualJob(acj, o.Name, o.now())
	if err != nil {
		return fmt.Errorf("advancedcronjob %s/%s: %w", acj.Namespace, acj.Name, err)
	}
	if err := util.CreateOrUpdateAnnotation(o.SaveConfig, job, encoder); err != nil {
		return err
	}
	if o.DryRun != cmdutil.DryRunClient {
		created, err := o.create(ctx, job)
		if err != nil {
			return fmt.Errorf("creating %s %s/%s from advancedcronjob %s: %w", strings.ToLower(string(cronjobs.KindOf(&acj.Spec))), acj.Namespace, o.Name, acj.Name, err)
		}
		job = created
	}
	return o.printObject(job, o.Out)
}

// create sends the job with kubectl's create options.
func (o *JobOptions) create(ctx context.Context, job cronjobs.Object) (cronjobs.Object, error) {
	opts := metav1.CreateOptions{DryRun: cliutil.DryRun(o.DryRun), FieldManager: o.FieldManager, FieldValidation: o.Validation}
	ns := job.GetNamespace()
	switch j := job.(type) {
	case *batchv1.Job:
		return o.Kube.BatchV1().Jobs(ns).Create(ctx, j, opts)
	case *appsv1beta1.BroadcastJob:
		return o.Kruise.AppsV1beta1().BroadcastJobs(ns).Create(ctx, j, opts)
	case *appsv1beta1.ImageListPullJob:
		return o.Kruise.AppsV1beta1().ImageListPullJobs(ns).Create(ctx, j, opts)
	}
	return job, fmt.Errorf("cannot create a %T", job)
}
