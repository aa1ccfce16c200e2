package storageversion

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
)

// Name is the controller's name.
const Name = "storage-version-migrator"

// CRD is one CRD the migrator looks after.
type CRD struct {
	Name string
	// NeedsWebhook: its versions differ in more than their name (see Decide).
	NeedsWebhook bool
}

// KruiseCRDs are kruise's CRDs served in two versions: the image, CRR and job kinds have the same
// schema in both (AdvancedCronJob's v1alpha1 lacks one template, which the API server prunes),
// the workloads and NodeImage convert through /convert.
var KruiseCRDs = []CRD{
	{Name: "containerrecreaterequests.apps.kruise.io"},
	{Name: "imagepulljobs.apps.kruise.io"},
	{Name: "imagelistpulljobs.apps.kruise.io"},
	{Name: "broadcastjobs.apps.kruise.io"},
	{Name: "advancedcronjobs.apps.kruise.io"},
	{Name: "nodeimages.apps.kruise.io", NeedsWebhook: true},
	{Name: "clonesets.apps.kruise.io", NeedsWebhook: true},
	{Name: "daemonsets.apps.kruise.io", NeedsWebhook: true},
	{Name: "statefulsets.apps.kruise.io", NeedsWebhook: true},
	{Name: "sidecarsets.apps.kruise.io", NeedsWebhook: true},
}

// pageSize bounds each list: a page of object metadata at a time, whatever the number of objects.
const pageSize = 500

// Config is what the migrator works with.
type Config struct {
	CRDs apiextensionsclient.CustomResourceDefinitionInterface
	// Objects lists and patches the CRDs' objects (metadata only). Give it a client of its own:
	// a migration is one patch per object, which must not spend the controllers' rate limit.
	Objects metadata.Interface
	// Watched are the CRDs to look after; nil is KruiseCRDs.
	Watched []CRD
	// Recheck is how long after a pass that left nothing to do the CRDs are read again (one GET
	// each); 0 is an hour. A CRD flipped back to another storage version (say, OpenKruise
	// installed over kruise) is taken up then.
	Recheck time.Duration
	// Retry is the first wait after a pass that failed or found a CRD blocked; it doubles up to
	// five minutes. 0 is 10 s.
	Retry time.Duration
}

// Migrator is the controller.
type Migrator struct {
	cfg Config
}

// New returns the migrator.
func New(cfg Config) (*Migrator, error) {
	if cfg.CRDs == nil || cfg.Objects == nil {
		return nil, errors.New("storageversion: CRDs and Objects clients are required")
	}
	if cfg.Watched == nil {
		cfg.Watched = KruiseCRDs
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = time.Hour
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 10 * time.Second
	}
	return &Migrator{cfg: cfg}, nil
}

// Name implements the controller registry's interface.
func (m *Migrator) Name() string { return Name }

// Run migrates every watched CRD that needs it, then looks again every Recheck; failures are
// retried with a growing wait. It returns when ctx ends.
func (m *Migrator) Run(ctx context.Context, _ int) error {
	logger := klog.FromContext(ctx)
	retry := m.cfg.Retry
	checked := false
	for {
		wait := m.cfg.Recheck
		if err := m.Pass(ctx); err != nil {
			logger.Error(err, "Storage version migration not finished; trying again", "after", retry)
			wait, retry = retry, min(retry*2, 5*time.Minute)
		} else {
			retry = m.cfg.Retry
			if !checked {
				// Once per leadership term: that every object is in its storage version now.
				logger.Info("Every object of kruise's CRDs is stored in the storage version", "crds", len(m.cfg.Watched), "recheck", m.cfg.Recheck)
				checked = true
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Pass looks at every watched CRD once and migrates those that need it. The error joins those
// of the CRDs that failed or are blocked.
func (m *Migrator) Pass(ctx context.Context) error {
	var errs []error
	for _, c := range m.cfg.Watched {
		if err := m.migrate(ctx, c); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (m *Migrator) migrate(ctx context.Context, c CRD) error {
	logger := klog.FromContext(ctx).WithValues("crd", c.Name)
	crd, err := m.cfg.CRDs.Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // not installed: nothing stored
	}
	if err != nil {
		return fmt.Errorf("reading the CRD: %w", err)
	}
	d, err := Decide(crd, c.NeedsWebhook)
	if err != nil {
		return err
	}
	switch d.Action {
	case ActionNone:
		return nil
	case ActionBlocked:
		return errors.New(d.Why)
	}
	logger.Info("Rewriting objects stored in an older version in the storage version", "storedVersions", crd.Status.StoredVersions, "storage", d.Storage)
	start := time.Now()
	n, err := m.rewriteAll(ctx, d)
	if err != nil {
		return fmt.Errorf("after rewriting %d objects: %w", n, err)
	}
	if err := m.dropStale(ctx, c.Name, d); err != nil {
		return err
	}
	logger.Info("Every object is stored in the storage version", "objects", n, "storage", d.Storage, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// rewriteAll patches every object of d.Resource with an empty merge patch, page by page; it
// returns how many it rewrote.
func (m *Migrator) rewriteAll(ctx context.Context, d Decision) (int, error) {
	res := m.cfg.Objects.Resource(d.Resource)
	n := 0
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		page, err := res.List(ctx, opts)
		if err != nil {
			// An expired continue token (410) included: the next pass starts over, rewriting
			// again what it already did, which costs writes and changes nothing.
			return n, fmt.Errorf("listing %s: %w", d.Resource.Resource, err)
		}
		for i := range page.Items {
			obj := &page.Items[i]
			_, err := res.Namespace(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, []byte("{}"), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				continue // deleted meanwhile
			}
			if err != nil {
				return n, fmt.Errorf("rewriting %s %s: %w", d.Resource.Resource, klog.KObj(obj), err)
			}
			n++
		}
		if page.Continue == "" {
			return n, nil
		}
		opts.Continue = page.Continue
	}
}

// dropStale sets the CRD's storedVersions to the storage version alone, unless the CRD changed
// storage version meanwhile (then the next pass sees it).
func (m *Migrator) dropStale(ctx context.Context, name string, d Decision) error {
	return wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 5}, func(ctx context.Context) (bool, error) {
		crd, err := m.cfg.CRDs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading the CRD again: %w", err)
		}
		if storageOf(crd) != d.Storage {
			return false, fmt.Errorf("the storage version changed from %s to %s while its objects were rewritten", d.Storage, storageOf(crd))
		}
		crd = crd.DeepCopy()
		crd.Status.StoredVersions = d.StoredAfter()
		_, err = m.cfg.CRDs.UpdateStatus(ctx, crd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("setting status.storedVersions to %v: %w", d.StoredAfter(), err)
		}
		return true, nil
	})
}

func storageOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
