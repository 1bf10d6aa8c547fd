// Package sanitize turns a live Kubernetes object into the bytes of its mirrored YAML
// file and says where that file lives in the repository.
//
// The mirror keeps what a person declares (apiVersion, kind, name, namespace, labels,
// annotations and the body) and drops what the server or controllers write, so that
// a change to status or bookkeeping fields produces byte-identical output: the ingest
// compares bytes with bytes.Equal and treats "identical" as "no event".
//
// Both the ingest and the attribution webhook fingerprint objects through this
// package; they must use the same rules, so the rules are package-level and fixed.
package sanitize

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// KeptMetadata is the allowlist of metadata fields the mirror keeps. Everything else
// in metadata is dropped, so a field the server starts populating in a future release
// cannot leak into the mirror. Dropped today, among others: uid, resourceVersion,
// generation, creationTimestamp, managedFields, ownerReferences, deletionTimestamp,
// deletionGracePeriodSeconds, selfLink, generateName and finalizers.
//
// Finalizers are dropped because they are almost always added and removed by
// controllers (kubernetes.io/pvc-protection, foregroundDeletion, operators' own),
// so keeping them would attribute controller bookkeeping to people and make the
// mirror differ between clusters.
var KeptMetadata = []string{"name", "namespace", "labels", "annotations"}

// DroppedAnnotations are written by clients or controllers as bookkeeping, not as
// intent: last-applied-configuration duplicates the object itself, and the
// deployment revision is bumped by the deployment controller on every rollout.
var DroppedAnnotations = []string{
	"kubectl.kubernetes.io/last-applied-configuration",
	"deployment.kubernetes.io/revision",
}

// Object returns the sanitized copy of u; u is not modified. It is idempotent:
// Object(Object(u)) equals Object(u).
func Object(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if u == nil || u.Object == nil {
		return nil, errors.New("sanitize: nil object")
	}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, errors.New("sanitize: object has no apiVersion or kind")
	}
	meta, err := sanitizeMetadata(u.Object["metadata"])
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		switch k {
		case "metadata", "status":
			continue
		}
		out[k] = deepCopy(v)
	}
	out["metadata"] = meta
	res := &unstructured.Unstructured{Object: out}
	dropKindFields(res)
	return res, nil
}

func sanitizeMetadata(raw any) (map[string]any, error) {
	in, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("sanitize: metadata is %T, want an object", raw)
	}
	if name, _ := in["name"].(string); name == "" {
		return nil, errors.New("sanitize: object has no metadata.name")
	}
	out := make(map[string]any, len(KeptMetadata))
	for _, k := range KeptMetadata {
		v, ok := in[k]
		if !ok || v == nil {
			continue
		}
		switch k {
		case "labels", "annotations":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("sanitize: metadata.%s is %T, want an object", k, v)
			}
			m = copyMap(m)
			if k == "annotations" {
				for _, a := range DroppedAnnotations {
					delete(m, a)
				}
			}
			if len(m) == 0 {
				continue // an empty map is noise in the diff
			}
			out[k] = m
		default:
			if s, _ := v.(string); s == "" {
				continue
			}
			out[k] = v
		}
	}
	return out, nil
}

// deepCopy copies JSON-shaped values. Unlike runtime.DeepCopyJSONValue it does not
// panic on scalar types outside the JSON set (e.g. an int in a hand-built object):
// scalars are immutable, so sharing them is safe.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = deepCopy(e)
	}
	return out
}
