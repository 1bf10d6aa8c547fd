package commitrequest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned/fake"
	configlisters "github.com/gitsave/gitsave/pkg/generated/listers/config/v1alpha1"
)

func gitTarget(name string) *configv1alpha1.GitTarget {
	return &configv1alpha1.GitTarget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"}}
}

func TestCachedTargetsFindsAJustCreatedTargetWithALiveGet(t *testing.T) {
	ctx := context.Background()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, indexer.Add(gitTarget("cached")))
	// "fresh" exists in the API but the informer has not seen it yet.
	client := fake.NewSimpleClientset(gitTarget("cached"), gitTarget("fresh"))
	c := CachedTargets{Lister: configlisters.NewGitTargetLister(indexer), Client: client.ConfigV1alpha1()}

	client.ClearActions()
	ok, err := c.TargetExists(ctx, "demo", "cached")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, client.Actions(), "a cached target needs no API call")

	ok, err = c.TargetExists(ctx, "demo", "fresh")
	require.NoError(t, err)
	assert.True(t, ok, "a target missing from the cache is looked up live")

	ok, err = c.TargetExists(ctx, "demo", "missing")
	require.NoError(t, err)
	assert.False(t, ok)
}
