package sanitize

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// ControlledByAnother reports whether u has an ownerReference with controller: true.
// Such objects are generated from their controller's spec (ReplicaSets, Pods,
// EndpointSlices…): the owner is what gets mirrored, so the ingest skips them by
// default. Call it on the live object: Object drops ownerReferences.
func ControlledByAnother(u *unstructured.Unstructured) bool {
	if u == nil {
		return false
	}
	for _, ref := range u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}
