package ingest

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitsave/gitsave/pkg/save"
)

// informerKey names one watch: a resource (at its preferred version) in a
// namespace. Every WatchRule and GitTarget that needs it shares it.
type informerKey struct {
	GVR       schema.GroupVersionResource
	Namespace string
}

func (k informerKey) String() string { return k.Namespace + "/" + displayGR(k.GVR.GroupResource()) }

// targetRoute is what one GitTarget receives.
type targetRoute struct {
	// Path is the GitTarget's spec.path, the folder its files live in.
	Path string
	// Informers feed the target, sorted; a resync needs all of them synced.
	Informers []informerKey
}

func (r targetRoute) equal(o targetRoute) bool {
	return r.Path == o.Path && slices.Equal(r.Informers, o.Informers)
}

// routes is the routing table derived from the WatchRules and GitTargets.
// It is replaced as a whole on every reconcile and never mutated after.
type routes struct {
	// byInformer lists the target keys ("namespace/name") an informer feeds, sorted.
	byInformer map[informerKey][]string
	// targets holds each routed target's path and informers.
	targets map[string]targetRoute
}

func newRoutes() *routes {
	return &routes{byInformer: map[informerKey][]string{}, targets: map[string]targetRoute{}}
}

// add routes gvr in namespace to target (a "namespace/name" key) with path.
func (r *routes) add(namespace, target, path string, gvr schema.GroupVersionResource) {
	k := informerKey{GVR: gvr, Namespace: namespace}
	if ts := r.byInformer[k]; !slices.Contains(ts, target) {
		ts = append(ts, target)
		slices.Sort(ts)
		r.byInformer[k] = ts
	}
	tr := r.targets[target]
	tr.Path = path
	if !slices.Contains(tr.Informers, k) {
		tr.Informers = append(tr.Informers, k)
		slices.SortFunc(tr.Informers, compareInformerKeys)
	}
	r.targets[target] = tr
}

func compareInformerKeys(a, b informerKey) int {
	return strings.Compare(a.Namespace+"\x00"+a.GVR.String(), b.Namespace+"\x00"+b.GVR.String())
}

// targetKey is the namespaced key the worker uses for a GitTarget.
func targetKey(namespace, name string) string { return namespace + "/" + name }

// displayGR spells a resource as status.watching does: resource.group, or
// resource for the core group.
func displayGR(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// RoutedTo returns whether an edit key's (group, resource, namespace) is
// currently mirrored into the GitTarget namespace/target. The answer is a
// snapshot taken now: the registry calls it once per CommitRequest and hands
// it to attribution.Index.Pending, which calls it under the index's lock, so
// it must not take the controller's lock.
func (c *Controller) RoutedTo(namespace, target string) func(save.EditKey) bool {
	c.mu.Lock()
	tr := c.routes.targets[targetKey(namespace, target)]
	c.mu.Unlock()
	routed := make(map[schema.GroupResource]bool, len(tr.Informers))
	for _, k := range tr.Informers {
		routed[k.GVR.GroupResource()] = true
	}
	return func(k save.EditKey) bool {
		return k.Namespace == namespace && routed[schema.GroupResource{Group: k.Group, Resource: k.Resource}]
	}
}

// BarrierKeys is the CommitRequest ordering barrier: author's admitted edits
// of resources routed to namespace/target that the watch has not shown yet.
func (c *Controller) BarrierKeys(author, namespace, target string) []save.EditKey {
	return c.cfg.Index.Pending(author, c.RoutedTo(namespace, target))
}

// WatchedResources lists the resources watched in at least one namespace,
// sorted: the admission webhook's rules follow it.
func (c *Controller) WatchedResources() []schema.GroupVersionResource {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []schema.GroupVersionResource
	for k := range c.routes.byInformer {
		if !slices.Contains(out, k.GVR) {
			out = append(out, k.GVR)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// WatchedNamespaces lists the namespaces with at least one watch, sorted: the
// admission webhook's namespaceSelector follows it.
func (c *Controller) WatchedNamespaces() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.routes.byInformer {
		if !slices.Contains(out, k.Namespace) {
			out = append(out, k.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// WatchChanged receives a value after the first reconcile and whenever
// WatchedResources or WatchedNamespaces change. It has one consumer (the
// webhook configuration reconciler); signals coalesce.
func (c *Controller) WatchChanged() <-chan struct{} { return c.watchChanged }
