package sanitize

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// headKeys come first in every file, in this order, so a reader sees what the object
// is before its body; the remaining top-level keys follow sorted.
var headKeys = []string{"apiVersion", "kind", "metadata"}

// Marshal sanitizes u and returns the deterministic YAML of the mirrored file.
// Because Object is idempotent, Marshal(live) and Marshal(Object(live)) are the same
// bytes. Byte equality of two results means "no change" (status-only updates, new
// resourceVersion, managedFields churn, … all compare equal).
func Marshal(u *unstructured.Unstructured) ([]byte, error) {
	s, err := Object(u)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(s.Object))
	for k := range s.Object {
		if !slices.Contains(headKeys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = append(slices.Clone(headKeys), keys...)

	// Each top-level key is marshaled as a one-entry mapping: sigs.k8s.io/yaml sorts
	// keys inside, and concatenating one-entry block mappings is a valid mapping with
	// our chosen key order.
	var out []byte
	for _, k := range keys {
		v, ok := s.Object[k]
		if !ok {
			continue
		}
		b, err := yaml.Marshal(map[string]any{k: v})
		if err != nil {
			return nil, fmt.Errorf("sanitize: marshal %s: %w", k, err)
		}
		out = append(out, b...)
	}
	return out, nil
}

// SameContent reports whether two mirrored files are the same. It is plain byte
// equality, named so the "status-only change is no event" rule has one home.
func SameContent(a, b []byte) bool { return string(a) == string(b) }
