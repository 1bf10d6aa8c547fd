package ingest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
)

// problem is one reason a WatchRule is not fully mirrored.
type problem struct {
	Reason, Message string
}

// resolution is what a WatchRule resolved to.
type resolution struct {
	// GVRs are the resources the rule selects that can be mirrored, sorted.
	GVRs []schema.GroupVersionResource
	// Problems are reported in the rule's Ready condition.
	Problems []problem
	// noMatch is set when discovery did not know a resource: a fresh discovery
	// may know it (a CRD created just before the rule).
	noMatch bool
}

// discoveryHealth says which API groups discovery could not read: a resource of
// such a group is "unknown" only because its server is unreachable right now.
type discoveryHealth struct {
	down   bool            // discovery failed as a whole
	failed map[string]bool // API groups whose discovery failed
}

func (h discoveryHealth) groupFailed(group string) bool { return h.down || h.failed[group] }

// checkDiscovery reads the (cached) discovery once per reconcile.
func checkDiscovery(d discovery.DiscoveryInterface) discoveryHealth {
	h := discoveryHealth{failed: map[string]bool{}}
	if d == nil {
		return h
	}
	_, _, err := d.ServerGroupsAndResources()
	if err == nil {
		return h
	}
	if gf, ok := errors.AsType[*discovery.ErrGroupDiscoveryFailed](err); ok {
		for gv := range gf.Groups {
			h.failed[gv.Group] = true
		}
		return h
	}
	h.down = true
	return h
}

// secretsGR is never mirrored: there is no encryption yet, and Secrets must
// not reach Git in plaintext.
var secretsGR = schema.GroupResource{Resource: "secrets"}

// resolveRule maps a rule's apiGroups × resources through the RESTMapper to
// preferred-version resources. As the ARCHITECTURE example shows
// (apiGroups ["", "apps"], resources ["configmaps", "deployments"]), the cross
// product is a convenience: a resource is unknown only when none of the
// rule's groups has it. prev is the rule's previous resolution: a resource
// whose group's discovery failed keeps its previous version, so a flaky
// aggregated API does not stop a watch (whose resync would delete the files).
func resolveRule(mapper meta.RESTMapper, health discoveryHealth, rule *configv1alpha1.WatchRule, prev []schema.GroupVersionResource) resolution {
	var res resolution
	var unknown, clusterScoped, failed []string
	secrets, wildcard := false, false
	for _, rr := range rule.Spec.Rules {
		for _, r := range rr.Resources {
			if r == "*" || slices.Contains(rr.APIGroups, "*") {
				wildcard = true
				continue
			}
			found := false
			for _, g := range rr.APIGroups {
				gr := schema.GroupResource{Group: g, Resource: r}
				if gr == secretsGR {
					secrets, found = true, true
					continue
				}
				gvr, namespaced, err := resolveResource(mapper, gr)
				switch {
				case err == nil && !namespaced:
					clusterScoped = appendUnique(clusterScoped, displayGR(gr))
					found = true
				case err == nil:
					res.GVRs = appendUnique(res.GVRs, gvr)
					found = true
				case meta.IsNoMatchError(err) && !health.groupFailed(g):
					// Another group of the rule may have it; decided below.
				default:
					// Discovery could not answer for this group: keep what was
					// watched before, if anything.
					for _, p := range prev {
						if p.GroupResource() == gr {
							res.GVRs = appendUnique(res.GVRs, p)
						}
					}
					failed = appendUnique(failed, displayGR(gr))
					found = true
				}
			}
			if !found {
				unknown = appendUnique(unknown, fmt.Sprintf("%s (apiGroups %s)", r, quoteGroups(rr.APIGroups)))
			}
		}
	}
	slices.SortFunc(res.GVRs, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	if len(failed) > 0 {
		res.Problems = append(res.Problems, problem{ReasonDiscoveryFailed,
			"API discovery failed for " + strings.Join(failed, ", ") + "; retrying (what was watched before is kept)"})
	}
	if len(unknown) > 0 {
		res.noMatch = true
		res.Problems = append(res.Problems, problem{ReasonResourceUnknown,
			"resources unknown to API discovery: " + strings.Join(unknown, ", ")})
	}
	if wildcard {
		res.Problems = append(res.Problems, problem{ReasonWildcardUnsupported,
			`"*" is not supported in apiGroups or resources: list resources by name`})
	}
	if len(clusterScoped) > 0 {
		res.Problems = append(res.Problems, problem{ReasonClusterScopedUnsupported,
			"cluster-scoped resources are not mirrored by a WatchRule: " + strings.Join(clusterScoped, ", ")})
	}
	if secrets {
		res.Problems = append(res.Problems, problem{ReasonSecretsSkipped,
			"secrets skipped: Secrets are never written to Git in plaintext and no encryption is configured"})
	}
	return res
}

// resolveResource returns gr's preferred version and whether it is namespaced.
func resolveResource(mapper meta.RESTMapper, gr schema.GroupResource) (schema.GroupVersionResource, bool, error) {
	gvr, err := preferredVersion(mapper, gr)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// preferredVersion finds gr's preferred version. A RESTMapper reads an empty
// group as "any group" and a group as a prefix when nothing matches exactly,
// while a rule means exactly that group ("" is the core group), so the answer
// is checked against the group.
func preferredVersion(mapper meta.RESTMapper, gr schema.GroupResource) (schema.GroupVersionResource, error) {
	noMatch := &meta.NoResourceMatchError{PartialResource: gr.WithVersion("")}
	if gr.Group == "" {
		// The core group has one version; other groups may share the name.
		gvrs, err := mapper.ResourcesFor(gr.WithVersion(""))
		if err != nil {
			return schema.GroupVersionResource{}, err
		}
		for _, gvr := range gvrs {
			if gvr.GroupResource() == gr {
				return gvr, nil
			}
		}
		return schema.GroupVersionResource{}, noMatch
	}
	gvr, err := mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	if gvr.GroupResource() != gr {
		return schema.GroupVersionResource{}, noMatch
	}
	return gvr, nil
}

func quoteGroups(groups []string) string {
	q := make([]string, len(groups))
	for i, g := range groups {
		q[i] = fmt.Sprintf("%q", g)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func appendUnique[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
