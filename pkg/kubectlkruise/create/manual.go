package create

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisescheme "github.com/nodekruise/kruise/pkg/client/clientset/versioned/scheme"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
	"github.com/nodekruise/kruise/pkg/workload/cronjobs"
)

// scheme knows the three kinds a job may be (batch/v1 Job and kruise's),
// so that the printer can name what the API server returned without its
// apiVersion and kind.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kruisescheme.AddToScheme(s))
	return s
}()

// encoder writes kubectl's last-applied-configuration (--save-config) of
// the three kinds.
var encoder = serializer.NewCodecFactory(scheme).LegacyCodec(batchv1.SchemeGroupVersion, appsv1beta1.SchemeGroupVersion)

// ManualJob is the job `create job NAME --from=acj/...` creates: the one
// the AdvancedCronJob's run would create (cronjobs.ChildFor: the template's
// kind, labels, annotations and spec, in the ACJ's namespace, controlled by
// it), except that it is named NAME, marked as made by hand with kubectl's
// cronjob.kubernetes.io/instantiate=manual, and carries no scheduled-at
// (it is no scheduled run: the controller must not take it for the last
// one). Its owner reference does not block the ACJ's deletion, as kubectl's
// to a CronJob does not: blocking would need the user to have update on
// advancedcronjobs/finalizers.
func ManualJob(acj *appsv1beta1.AdvancedCronJob, name string, now time.Time) (cronjobs.Object, error) {
	job, err := cronjobs.ChildFor(acj, now)
	if err != nil {
		return nil, err
	}
	job.SetName(name)
	annotations := job.GetAnnotations()
	delete(annotations, appsv1beta1.ScheduledAtAnnotation)
	annotations[cliutil.ManualRunAnnotation] = cliutil.ManualRunValue
	job.SetAnnotations(annotations)
	refs := job.GetOwnerReferences()
	for i := range refs {
		refs[i].BlockOwnerDeletion = nil
	}
	job.SetOwnerReferences(refs)
	return job, nil
}
