package sanitize

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPath(t *testing.T) {
	cases := []struct {
		target, ns, resource, group, name, want string
	}{
		{"", "demo", "configmaps", "", "web", "demo/configmaps/web.yaml"},
		{"", "demo", "deployments", "apps", "web", "demo/deployments.apps/web.yaml"},
		{"", "", "clusterroles", "rbac.authorization.k8s.io", "view", "_cluster/clusterroles.rbac.authorization.k8s.io/view.yaml"},
		{"clusters/dev", "demo", "configmaps", "", "web", "clusters/dev/demo/configmaps/web.yaml"},
		{"clusters/dev", "demo", "widgets", "example.com", "a.b", "clusters/dev/demo/widgets.example.com/a.b.yaml"},
		{"clusters/dev", "", "namespaces", "", "demo", "clusters/dev/_cluster/namespaces/demo.yaml"},
		{"/clusters/dev/", "demo", "services", "", "web", "clusters/dev/demo/services/web.yaml"},
		{"clusters//dev/.", "demo", "services", "", "web", "clusters/dev/demo/services/web.yaml"},
		{"/", "demo", "services", "", "web", "demo/services/web.yaml"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Path(c.target, c.ns, c.resource, c.group, c.name), "%+v", c)
	}
}

func TestParsePathRoundTrip(t *testing.T) {
	for _, target := range []string{"", "clusters/dev", "/clusters/dev/"} {
		for _, o := range []struct{ ns, resource, group, name string }{
			{"demo", "configmaps", "", "web"},
			{"demo", "deployments", "apps", "web"},
			{"", "clusterroles", "rbac.authorization.k8s.io", "view"},
			{"demo", "widgets", "example.com", "a.b.c"},
		} {
			p := Path(target, o.ns, o.resource, o.group, o.name)
			ns, res, grp, name, ok := ParsePath(target, p)
			assert.True(t, ok, p)
			assert.Equal(t, o.ns, ns, p)
			assert.Equal(t, o.resource, res, p)
			assert.Equal(t, o.group, grp, p)
			assert.Equal(t, o.name, name, p)
		}
	}
}

func TestParsePathRejects(t *testing.T) {
	cases := []struct{ target, p string }{
		{"", "README.md"},
		{"", "demo/configmaps/web.yml"},
		{"", "demo/configmaps/.yaml"},
		{"", "demo/configmaps/sub/web.yaml"},
		{"", "/demo/configmaps/web.yaml"},
		{"", "demo//configmaps/web.yaml"},
		{"", "demo/.apps/web.yaml"},
		{"clusters/dev", "clusters/prod/demo/configmaps/web.yaml"},
		{"clusters/dev", "clusters/dev2/demo/configmaps/web.yaml"},
		{"clusters/dev", "demo/configmaps/web.yaml"},
		{"clusters/dev", "clusters/dev/README.md"},
		{"clusters/dev", "clusters/dev/./demo/configmaps/web.yaml"},
	}
	for _, c := range cases {
		_, _, _, _, ok := ParsePath(c.target, c.p)
		assert.False(t, ok, "%+v", c)
	}
}
