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
		return typedAPI[*corev1.Secret, *corev1.SecretList]{
			client: func(ns string) typedClient[*corev1.Secret, *corev1.SecretList] { return client.CoreV1().Secrets(ns) },
			items:  func(l *corev1.SecretList) []metav1.Object { return objects(l.Items) },
		}
	}
	return typedAPI[*corev1.ConfigMap, *corev1.ConfigMapList]{
		client: func(ns string) typedClient[*corev1.ConfigMap, *corev1.ConfigMapList] {
			return client.CoreV1().ConfigMaps(ns)
		},
		items: func(l *corev1.ConfigMapList) []metav1.Object { return objects(l.Items) },
	}
}

func deleteOptions(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

func nameSelector(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

// typedClient is the part of client-go's typed Secret and ConfigMap clients kindAPI needs.
type typedClient[T metav1.Object, L any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}

// typedAPI is kindAPI over one kind's typed client.
type typedAPI[T metav1.Object, L any] struct {
	client func(ns string) typedClient[T, L]
	items  func(L) []metav1.Object
}

func (a typedAPI[T, L]) get(ctx context.Context, ns, name string) (metav1.Object, error) {
	return a.client(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a typedAPI[T, L]) create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	o, ok := obj.(T)
	if !ok {
		return nil, fmt.Errorf("not a %T: %T", o, obj)
	}
	return a.client(o.GetNamespace()).Create(ctx, o, metav1.CreateOptions{})
}

func (a typedAPI[T, L]) update(ctx context.Context, obj metav1.Object) error {
	o, ok := obj.(T)
	if !ok {
		return fmt.Errorf("not a %T: %T", o, obj)
	}
	_, err := a.client(o.GetNamespace()).Update(ctx, o, metav1.UpdateOptions{})
	return err
}

func (a typedAPI[T, L]) delete(ctx context.Context, ns, name string, uid types.UID) error {
	return a.client(ns).Delete(ctx, name, deleteOptions(uid))
}

func (a typedAPI[T, L]) listNamed(ctx context.Context, name string) ([]metav1.Object, error) {
	l, err := a.client("").List(ctx, nameSelector(name))
	if err != nil {
		return nil, err
	}
	return a.items(l), nil
}

// objects are pointers to a list's items, as metav1.Objects.
func objects[E any, P interface {
	*E
	metav1.Object
}](items []E) []metav1.Object {
	out := make([]metav1.Object, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]))
	}
	return out
}
