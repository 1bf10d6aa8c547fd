package sanitize

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current output")

func load(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	j, err := yaml.YAMLToJSON(raw)
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(j))
	return u
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"deployment", "service", "service-headless", "configmap", "widget"} {
		t.Run(name, func(t *testing.T) {
			got, err := Marshal(load(t, name+".input.yaml"))
			require.NoError(t, err)
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create the golden file")
			assert.Equal(t, string(want), string(got))

			// The output must parse back to exactly the sanitized object.
			var back map[string]any
			require.NoError(t, yaml.Unmarshal(got, &back))
			s, err := Object(load(t, name+".input.yaml"))
			require.NoError(t, err)
			sj, err := s.MarshalJSON()
			require.NoError(t, err)
			var want2 map[string]any
			require.NoError(t, yaml.Unmarshal(sj, &want2))
			assert.Equal(t, want2, back)
		})
	}
}

func TestObjectDropsServerFields(t *testing.T) {
	s, err := Object(load(t, "widget.input.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, s.Object, "status")
	meta := s.Object["metadata"].(map[string]any)
	assert.Equal(t, map[string]any{
		"name":      "blue",
		"namespace": "demo",
		"labels":    map[string]any{"color": "blue"},
	}, meta)
}

func TestObjectDoesNotModifyInput(t *testing.T) {
	u := load(t, "deployment.input.yaml")
	before := u.DeepCopy()
	s, err := Object(u)
	require.NoError(t, err)
	assert.Equal(t, before, u)
	// Mutating the result must not reach the input either.
	unstructured.SetNestedField(s.Object, int64(9), "spec", "replicas")
	assert.Equal(t, before, u)
}

func TestObjectIdempotent(t *testing.T) {
	for _, f := range []string{"deployment", "service", "configmap", "widget"} {
		u := load(t, f+".input.yaml")
		once, err := Object(u)
		require.NoError(t, err)
		twice, err := Object(once)
		require.NoError(t, err)
		assert.Equal(t, once, twice, f)
		a, _ := Marshal(u)
		b, _ := Marshal(once)
		assert.Equal(t, string(a), string(b), f)
	}
}

func TestEmptyMetadataMapsRemoved(t *testing.T) {
	u := load(t, "configmap.input.yaml")
	// Only a dropped annotation: the annotations map must disappear entirely.
	s, err := Object(u)
	require.NoError(t, err)
	assert.NotContains(t, s.Object["metadata"], "annotations")

	svc, err := Object(load(t, "service.input.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, svc.Object["metadata"], "labels")
	assert.NotContains(t, svc.Object["metadata"], "annotations")
}

func TestServiceClusterIPs(t *testing.T) {
	s, err := Object(load(t, "service.input.yaml"))
	require.NoError(t, err)
	spec := s.Object["spec"].(map[string]any)
	assert.NotContains(t, spec, "clusterIP")
	assert.NotContains(t, spec, "clusterIPs")
	assert.Equal(t, []any{"IPv4"}, spec["ipFamilies"], "ipFamilies is kept")

	h, err := Object(load(t, "service-headless.input.yaml"))
	require.NoError(t, err)
	spec = h.Object["spec"].(map[string]any)
	assert.Equal(t, "None", spec["clusterIP"], "headless is the user's intent")
	assert.Equal(t, []any{"None"}, spec["clusterIPs"])
}

func TestStatusOnlyChangeIsSameBytes(t *testing.T) {
	a := load(t, "deployment.input.yaml")
	b := a.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(b.Object, int64(1), "status", "readyReplicas"))
	b.SetResourceVersion("99999")
	b.SetGeneration(5)
	b.SetManagedFields(nil)
	b.SetFinalizers(nil)
	b.SetAnnotations(map[string]string{"team": "payments", "deployment.kubernetes.io/revision": "4"})

	ba, err := Marshal(a)
	require.NoError(t, err)
	bb, err := Marshal(b)
	require.NoError(t, err)
	assert.True(t, SameContent(ba, bb))

	// A spec change is a change.
	require.NoError(t, unstructured.SetNestedField(b.Object, int64(4), "spec", "replicas"))
	bc, err := Marshal(b)
	require.NoError(t, err)
	assert.False(t, SameContent(ba, bc))
}

func TestMarshalByteStable(t *testing.T) {
	first, err := Marshal(load(t, "widget.input.yaml"))
	require.NoError(t, err)
	for range 50 {
		// A fresh decode builds fresh maps, so Go's map order differs between runs.
		again, err := Marshal(load(t, "widget.input.yaml"))
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
	assert.Regexp(t, `^apiVersion: .*\nkind: .*\nmetadata:\n`, string(first), "head keys first")
}

func TestMarshalHandBuiltObject(t *testing.T) {
	// Hand-built objects may carry Go ints; sanitizing must not panic on them.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "generation": 3},
		"data":     map[string]any{"count": 1},
	}}
	b, err := Marshal(u)
	require.NoError(t, err)
	assert.Equal(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  count: 1\n", string(b))
}

func TestObjectErrors(t *testing.T) {
	cases := map[string]*unstructured.Unstructured{
		"nil":          nil,
		"empty":        {},
		"no kind":      {Object: map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "x"}}},
		"no name":      {Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{}}},
		"bad metadata": {Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"}},
		"bad labels": {Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "x", "labels": "a=b"}}},
	}
	for name, u := range cases {
		_, err := Object(u)
		assert.Error(t, err, name)
		_, err = Marshal(u)
		assert.Error(t, err, name)
	}
}

func TestControlledByAnother(t *testing.T) {
	yes, no := true, false
	mk := func(refs ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "ReplicaSet",
			"metadata": map[string]any{"name": "web-1", "ownerReferences": refs},
		}}
	}
	ref := func(controller *bool) any {
		r := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u"}
		if controller != nil {
			r["controller"] = *controller
		}
		return r
	}
	assert.True(t, ControlledByAnother(mk(ref(&yes))))
	assert.True(t, ControlledByAnother(mk(ref(nil), ref(&yes))))
	assert.False(t, ControlledByAnother(mk(ref(&no))))
	assert.False(t, ControlledByAnother(mk(ref(nil))))
	assert.False(t, ControlledByAnother(load(t, "configmap.input.yaml")))
	assert.False(t, ControlledByAnother(load(t, "widget.input.yaml")), "owner without controller: true")
	assert.False(t, ControlledByAnother(nil))
}
