//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// target creates, as the admin, a GitProvider for the local remote and a GitTarget on
// its own branch with a long commit window, so only a Save commits.
func target(t *testing.T, ns, name string) (branch string) {
	t.Helper()
	return targetWithWindow(t, ns, name, "5m")
}

// targetWithWindow is target with another commit window.
func targetWithWindow(t *testing.T, ns, name, window string) (branch string) {
	t.Helper()
	branch = ns + "-" + name
	as(t, "admin", ns).must(fmt.Sprintf(`apiVersion: config.gitsave.dev/v1alpha1
kind: GitProvider
metadata: {name: remote}
spec:
  url: %[1]s
  secretRef: {name: git-creds}
---
apiVersion: config.gitsave.dev/v1alpha1
kind: GitTarget
metadata: {name: %[2]s}
spec:
  providerRef: {name: remote}
  branch: %[3]s
  path: clusters/%[2]s
  commitWindow: %[4]s
`, env["GIT_REMOTE_URL"], name, branch, window), "apply", "-f", "-")
	return branch
}

func saveManifest(name, target, message string, closeDelay int) string {
	return fmt.Sprintf(`apiVersion: gitsave.dev/v1alpha1
kind: CommitRequest
metadata: {name: %s}
spec:
  targetRef: {name: %s}
  message: %q
  closeDelaySeconds: %d
`, name, target, message, closeDelay)
}

func TestSaveAPIThroughTheAggregator(t *testing.T) {
	ns := namespace(t)
	target(t, ns, "dev")
	jane := as(t, "jane", ns)

	jane.must(saveManifest("first", "dev", "Scale web", 0), "create", "-f", "-")
	assert.Equal(t, "jane", jane.must("", "get", "commitrequest", "first", "-o", "jsonpath={.status.author.username}"),
		"the author is the user the kube-apiserver authenticated")
	jane.must("", "wait", "--for=condition=Attributed", "creq/first", "--timeout=60s")

	header := strings.Fields(strings.SplitN(jane.must("", "get", "creq", "-o", "wide"), "\n", 2)[0])
	assert.Equal(t, []string{"NAME", "TARGET", "AUTHOR", "READY", "REASON", "SHA", "AGE", "PUSHED", "BRANCH", "FINALIZED-BY"}, header)

	explain := jane.must("", "explain", "commitrequest.spec.message")
	assert.Contains(t, explain, "verbatim")
}

func TestCarolCannotSave(t *testing.T) {
	ns := namespace(t)
	target(t, ns, "dev")
	out, err := as(t, "carol", ns).run(saveManifest("carols", "dev", "m", 0), "create", "-f", "-")
	require.Error(t, err)
	assert.Contains(t, out, "Forbidden")
	assert.Contains(t, out, `User "carol" cannot create resource "commitrequests"`)
}

func TestBadInputIsRefusedNamingTheField(t *testing.T) {
	ns := namespace(t)
	target(t, ns, "dev")
	jane := as(t, "jane", ns)
	cases := map[string]struct{ manifest, want string }{
		"tab":       {saveManifest("a", "dev", "a\tb", 0), "spec.message: Invalid value"},
		"too long":  {saveManifest("b", "dev", strings.Repeat("x", 1025), 0), "spec.message: Too long"},
		"delay":     {saveManifest("c", "dev", "m", 301), "spec.closeDelaySeconds: Invalid value: 301"},
		"no target": {saveManifest("d", "nope", "m", 0), `spec.targetRef.name: Not found: "nope"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := jane.run(tc.manifest, "create", "-f", "-")
			require.Error(t, err)
			assert.Contains(t, out, "is invalid")
			assert.Contains(t, out, tc.want)
		})
	}
}
