// Package create is `kubectl kruise create`: for now its one subcommand,
// `create job NAME --from=acj/NAME`, runs an AdvancedCronJob's job now, by
// hand, as `kubectl create job --from=cronjob/NAME` does for a CronJob. The
// job is built by the rules the AdvancedCronJob controller builds its runs
// with (pkg/workload/cronjobs), so it is whatever the template makes: a
// Job, a BroadcastJob or an ImageListPullJob. `--image` and
// `--from=cronjob/NAME` are handed to kubectl's own create job.
package create

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// NewCmdCreate is `kubectl kruise create`, the group.
func NewCmdCreate(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create SUBCOMMAND",
		Short: "Create a job from an AdvancedCronJob now (create job --from=acj/NAME)",
		Long: `Create kruise objects that are not written as manifests: a job of an
AdvancedCronJob, run now by hand.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdCreateJob(f, streams))
	return cmd
}

const jobExample = `  # Run AdvancedCronJob nightly-report's job now, as job report-now
  kubectl kruise create job report-now --from=acj/nightly-report

  # Print it without creating it
  kubectl kruise create job report-now --from=advancedcronjob/nightly-report --dry-run=client -o yaml

  # As kubectl create job (handed to kubectl's own): a Job of an image, or of a CronJob
  kubectl kruise create job pi --image=perl:5.34 -- perl -Mbignum=bpi -wle 'print bpi(200)'
  kubectl kruise create job backup-now --from=cronjob/backup`

// NewCmdCreateJob is `kubectl kruise create job`.
func NewCmdCreateJob(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewJobOptions(streams)
	cmd := &cobra.Command{
		Use:                   "job NAME --from=acj/NAME | --from=cronjob/NAME | --image=IMAGE [-- COMMAND [args...]]",
		DisableFlagsInUseLine: true,
		Short:                 "Create a job now from an AdvancedCronJob's template (or as kubectl create job)",
		Long: `Create a job named NAME now from an AdvancedCronJob's template, as kubectl create job
--from=cronjob/NAME does for a CronJob. The job is of the kind the template makes (a Job,
a BroadcastJob or an ImageListPullJob), in the AdvancedCronJob's namespace, with the
template's labels and annotations, the annotation cronjob.kubernetes.io/instantiate=manual,
and the AdvancedCronJob as its controller (so it is listed among its jobs, counted by its
history limits, and deleted with it). It carries no apps.kruise.io/scheduled-at: it is not
a scheduled run and does not move the schedule.

--image and --from=cronjob/NAME are kubectl create job's, handed to kubectl.`,
		Example: jobExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, ok := acjName(o.From); ok {
				return o.runE(f)(cmd, args)
			}
			return o.kubectl(f, cmd, args)
		},
	}
	o.PrintFlags.AddFlags(cmd)
	cmdutil.AddApplyAnnotationFlags(cmd)
	cmdutil.AddValidateFlags(cmd)
	cmdutil.AddDryRunFlag(cmd)
	flags := cmd.Flags()
	flags.StringVar(&o.Image, "image", "", "Image name to run (kubectl create job's).")
	flags.StringVar(&o.From, "from", "", "The resource to create the job from: acj/NAME (advancedcronjob/NAME) or cronjob/NAME.")
	cmdutil.AddFieldManagerFlagVar(cmd, &o.FieldManager, "kubectl-create")
	_ = cmd.RegisterFlagCompletionFunc("from", completeFrom(f))
	return cmd
}
