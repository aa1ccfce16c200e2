package resourcedistribution

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// kindAPI is the few calls the controller makes on copies of one kind.
type kindAPI interface {
	get(ctx context.Context, ns, name string) (metav1.Object, error)
	create(ctx context.Context, obj metav1.Object) (metav1.Object, error)
	update(ctx context.Context, obj metav1.Object) error
	delete(ctx context.Context, ns, name string, uid types.UID) error
	// listNamed lists the objects named name in every namespace (adoption, once per distribution).
	listNamed(ctx context.Context, name string) ([]metav1.Object, error)
}

func apiFor(client kubernetes.Interface, kind string) kindAPI {
	if kind == KindSecret {
		return secretsAPI{client}
	}
	return configMapsAPI{client}
}

func deleteOptions(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

func nameSelector(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

type secretsAPI struct{ c kubernetes.Interface }

func (a secretsAPI) get(ctx context.Context, ns, name string) (metav1.Object, error) {
	return a.c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a secretsAPI) create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, fmt.Errorf("not a Secret: %T", obj)
	}
	return a.c.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
}

func (a secretsAPI) update(ctx context.Context, obj metav1.Object) error {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return fmt.Errorf("not a Secret: %T", obj)
	}
	_, err := a.c.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
	return err
}

func (a secretsAPI) delete(ctx context.Context, ns, name string, uid types.UID) error {
	return a.c.CoreV1().Secrets(ns).Delete(ctx, name, deleteOptions(uid))
}

func (a secretsAPI) listNamed(ctx context.Context, name string) ([]metav1.Object, error) {
	l, err := a.c.CoreV1().Secrets("").List(ctx, nameSelector(name))
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}

type configMapsAPI struct{ c kubernetes.Interface }

func (a configMapsAPI) get(ctx context.Context, ns, name string) (metav1.Object, error) {
	return a.c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a configMapsAPI) create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	c, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("not a ConfigMap: %T", obj)
	}
	return a.c.CoreV1().ConfigMaps(c.Namespace).Create(ctx, c, metav1.CreateOptions{})
}

func (a configMapsAPI) update(ctx context.Context, obj metav1.Object) error {
	c, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return fmt.Errorf("not a ConfigMap: %T", obj)
	}
	_, err := a.c.CoreV1().ConfigMaps(c.Namespace).Update(ctx, c, metav1.UpdateOptions{})
	return err
}

func (a configMapsAPI) delete(ctx context.Context, ns, name string, uid types.UID) error {
	return a.c.CoreV1().ConfigMaps(ns).Delete(ctx, name, deleteOptions(uid))
}

func (a configMapsAPI) listNamed(ctx context.Context, name string) ([]metav1.Object, error) {
	l, err := a.c.CoreV1().ConfigMaps("").List(ctx, nameSelector(name))
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}
