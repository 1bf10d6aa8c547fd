//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gitsave/gitsave/pkg/git/gittest"
)

// eventually polls cond (which reads the remote or the cluster) until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	require.NoError(t, err, what)
}

func file(t *testing.T, branch, path string) (string, bool) {
	b, ok := gittest.ShowFile(t, env["GIT_REMOTE_DIR"], branch, path)
	return string(b), ok
}

// A deleted object's file is removed by the author's next commit.
func TestDeleteRemovesTheFile(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	branch := mirror(t, ns, "dev")
	jane := as(t, "jane", ns)
	path := "clusters/dev/" + ns + "/configmaps/temporary.yaml"

	jane.must(configMap("temporary", "1"), "apply", "-f", "-")
	windowAuthor(t, ns, "dev", "jane")
	jane.must(saveManifest("add", "dev", "Add temporary", 0), "create", "-f", "-")
	jane.must("", "wait", "--for=condition=Ready", "creq/add", "--timeout=60s")
	_, ok := file(t, branch, path)
	require.True(t, ok)

	jane.must("", "delete", "configmap", "temporary")
	windowAuthor(t, ns, "dev", "jane")
	jane.must(saveManifest("remove", "dev", "Remove temporary", 0), "create", "-f", "-")
	jane.must("", "wait", "--for=condition=Ready", "creq/remove", "--timeout=60s")
	_, ok = file(t, branch, path)
	assert.False(t, ok, "the file is gone")
	log := commits(t, branch)
	require.Len(t, log, 2)
	assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author, "the delete is jane's")
}

// A write the attribution webhook never saw is mirrored under the fallback author,
// and gitsave restores its webhook configuration once it may. Here the
// configuration is deleted while gitsave lacks the permission to write it (its
// gitsave:webhook-registration binding is removed); in a cluster, the same
// happens to a webhook call that failed under failurePolicy Ignore. Not parallel:
// the webhook configuration is shared by every test.
func TestWriteWithoutAFactGetsTheFallbackAuthor(t *testing.T) {
	ns := namespace(t)
	branch := mirrorWithWindow(t, ns, "dev", "2s")
	admin := as(t, "admin", "")
	covers := func() bool {
		out, err := admin.run("", "get", "validatingwebhookconfiguration", "gitsave-attribution", "-o", "jsonpath={.webhooks[0].namespaceSelector}")
		return err == nil && strings.Contains(out, `"`+ns+`"`)
	}
	eventually(t, "the webhook configuration covers the namespace", covers)

	// Deleted while gitsave may write it: restored at once.
	admin.must("", "delete", "validatingwebhookconfiguration", "gitsave-attribution")
	eventually(t, "gitsave restores its deleted webhook configuration", covers)

	binding := admin.must("", "get", "clusterrolebinding", "gitsave:webhook-registration", "-o", "json")
	var saved map[string]interface{}
	require.NoError(t, json.Unmarshal([]byte(binding), &saved))
	meta := saved["metadata"].(map[string]interface{})
	for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"} {
		delete(meta, k)
	}
	restoreBinding, err := json.Marshal(saved)
	require.NoError(t, err)
	restored := false
	restore := func() {
		if !restored {
			restored = true
			admin.must(string(restoreBinding), "apply", "-f", "-")
		}
	}
	defer restore()

	admin.must("", "delete", "clusterrolebinding", "gitsave:webhook-registration")
	sa := "system:serviceaccount:gitsave-system:gitsave-apiserver"
	eventually(t, "gitsave may no longer write webhook configurations", func() bool {
		out, _ := admin.run("", "auth", "can-i", "create", "validatingwebhookconfigurations.admissionregistration.k8s.io", "--as", sa)
		return slices.Contains(strings.Split(out, "\n"), "no") // among warnings on stderr
	})
	admin.must("", "delete", "validatingwebhookconfiguration", "gitsave-attribution")
	as(t, "jane", ns).must(configMap("unseen", "1"), "apply", "-f", "-")

	restore()
	eventually(t, "gitsave restores its webhook configuration once it may", covers)
	eventually(t, "the silence timer committed the edit", func() bool { return len(commits(t, branch)) == 1 })
	log := commits(t, branch)
	assert.Equal(t, "gitsave:unattributed <gitsave:unattributed@users.noreply.gitsave.dev>", log[0].Author)
}

// An edit and a delete made while gitsave was stopped are committed by the resync when
// it starts again, as the committer. Not parallel: it restarts gitsave-apiserver.
func TestResyncAfterRestartCatchesUp(t *testing.T) {
	ns := namespace(t)
	branch := mirror(t, ns, "dev")
	jane := as(t, "jane", ns)
	jane.must(configMap("kept", "before"), "apply", "-f", "-")
	jane.must(configMap("removed", "x"), "apply", "-f", "-")
	windowAuthor(t, ns, "dev", "jane")
	jane.must(saveManifest("first", "dev", "Two ConfigMaps", 0), "create", "-f", "-")
	jane.must("", "wait", "--for=condition=Ready", "creq/first", "--timeout=60s")
	require.Len(t, commits(t, branch), 1)

	local(t, "source hack/local/lib.sh && stop gitsave-apiserver")
	jane.must(configMap("kept", "after"), "apply", "-f", "-")
	jane.must("", "delete", "configmap", "removed")
	local(t, "hack/local/up.sh")

	kept := "clusters/dev/" + ns + "/configmaps/kept.yaml"
	eventually(t, "the resync committed the changes made while gitsave was down", func() bool {
		content, _ := file(t, branch, kept)
		_, stillThere := file(t, branch, "clusters/dev/"+ns+"/configmaps/removed.yaml")
		return strings.Contains(content, "after") && !stillThere
	})
	log := commits(t, branch)
	require.Len(t, log, 2, "one resync commit")
	assert.Equal(t, "gitsave <gitsave@noreply.gitsave.dev>", log[0].Author, "the resync is the committer's")
}

// local runs a shell command of the local control plane from the repository root.
func local(t *testing.T, script string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = "../.."
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", script, out)
}
