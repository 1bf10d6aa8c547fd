package commitrequest

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configclient "github.com/gitsave/gitsave/pkg/generated/clientset/versioned/typed/config/v1alpha1"
	configlisters "github.com/gitsave/gitsave/pkg/generated/listers/config/v1alpha1"
)

// CachedTargets checks the informer cache first and, on a miss, asks the API server,
// so a GitTarget created a moment ago is found.
type CachedTargets struct {
	Lister configlisters.GitTargetLister
	Client configclient.GitTargetsGetter
}

func (c CachedTargets) TargetExists(ctx context.Context, namespace, name string) (bool, error) {
	if c.Lister != nil {
		if _, err := c.Lister.GitTargets(namespace).Get(name); err == nil {
			return true, nil
		}
	}
	_, err := c.Client.GitTargets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}
