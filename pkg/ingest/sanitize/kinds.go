package sanitize

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FieldDrop removes one server-allocated field of one kind from the mirror.
type FieldDrop struct {
	Group, Kind string
	// Path is the field path from the object root.
	Path []string
	// Keep, when set, keeps the field for values that are the user's intent rather
	// than an allocation.
	Keep func(v any) bool
}

// KindFieldDrops is the per-kind table of fields the server allocates and that
// therefore differ per cluster (restoring the mirror into another cluster must not
// ask for the same addresses):
//
//	group  kind     field              kept when
//	""     Service  spec.clusterIP     "None" (headless: the user asked for it)
//	""     Service  spec.clusterIPs    ["None"]
//
// Deliberately kept: Service spec.ipFamilies/ipFamilyPolicy and ports[].nodePort —
// they are defaulted or allocated too, but a user can also set them and dropping them
// would lose that intent.
var KindFieldDrops = []FieldDrop{
	{Kind: "Service", Path: []string{"spec", "clusterIP"}, Keep: isNone},
	{Kind: "Service", Path: []string{"spec", "clusterIPs"}, Keep: isNone},
}

func isNone(v any) bool {
	switch t := v.(type) {
	case string:
		return t == "None"
	case []any:
		return len(t) == 1 && t[0] == "None"
	}
	return false
}

// dropKindFields applies KindFieldDrops to an already copied object.
func dropKindFields(u *unstructured.Unstructured) {
	gv := u.GroupVersionKind()
	for _, d := range KindFieldDrops {
		if d.Group != gv.Group || d.Kind != gv.Kind {
			continue
		}
		v, found, err := unstructured.NestedFieldNoCopy(u.Object, d.Path...)
		if err != nil || !found {
			continue
		}
		if d.Keep != nil && d.Keep(v) {
			continue
		}
		unstructured.RemoveNestedField(u.Object, d.Path...)
	}
}
