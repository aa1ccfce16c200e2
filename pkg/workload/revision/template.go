package revision

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// TemplatePath is where a workload's revision records its pod template (spec.template), as
// the built-in controllers' and OpenKruise's revisions do.
var TemplatePath = []string{"spec", "template"}

// ResolveTemplate resolves the revisions of a workload whose revisions record its pod
// template (CloneSet, Advanced StatefulSet, Advanced DaemonSet), and decodes the template each
// one records, by revision name. A revision that does not decode has no template: the pods at
// it cannot be compared, so they are recreated. On an error the revisions found so far are
// returned with it (their collision count may have moved).
func (h *History) ResolveTemplate(ctx context.Context, owner Owner, template *corev1.PodTemplateSpec, currentName string,
	collisionCount *int32) (*Revisions, map[string]*corev1.PodTemplateSpec, error) {
	data, err := PatchData(template, TemplatePath...)
	if err != nil {
		return nil, nil, fmt.Errorf("recording the pod template: %w", err)
	}
	var collisions int32
	if collisionCount != nil {
		collisions = *collisionCount
	}
	revs, err := h.Resolve(ctx, owner, Content{Data: data, Labels: template.Labels}, currentName, collisions)
	if err != nil {
		return revs, nil, fmt.Errorf("resolving the revisions: %w", err)
	}
	templates := make(map[string]*corev1.PodTemplateSpec, len(revs.All))
	for _, r := range revs.All {
		t := &corev1.PodTemplateSpec{}
		if err := DecodeData(r.Data.Raw, t, TemplatePath...); err == nil {
			templates[r.Name] = t
		}
	}
	return revs, templates, nil
}

// Templated is a workload's revisions resolved with the pod template each records, for a
// workload that compares a pod's template with the update's (CloneSet, Advanced StatefulSet).
type Templated struct {
	*Revisions
	// Templates holds the template of every revision that decodes, by revision name.
	Templates map[string]*corev1.PodTemplateSpec
}

// CurrentName and UpdateName are the current and update revisions' names.
func (t *Templated) CurrentName() string { return t.Current.Name }
func (t *Templated) UpdateName() string  { return t.Update.Name }

// Template is the pod template of revision name, or of the revision whose hash name is (a pod's
// label written by the CloneSetShortHash gate); nil when it is not in the history (or does not
// decode).
func (t *Templated) Template(name string) *corev1.PodTemplateSpec {
	if tpl, ok := t.Templates[name]; ok || name == "" {
		return tpl
	}
	for full, tpl := range t.Templates {
		if ShortHash(full) == name {
			return tpl
		}
	}
	return nil
}

// ResolveTemplated is ResolveTemplate as one Templated; nil on an error.
func (h *History) ResolveTemplated(ctx context.Context, owner Owner, template *corev1.PodTemplateSpec, currentName string,
	collisionCount *int32) (*Templated, error) {
	revs, templates, err := h.ResolveTemplate(ctx, owner, template, currentName, collisionCount)
	if err != nil {
		return nil, err
	}
	return &Templated{Revisions: revs, Templates: templates}, nil
}
