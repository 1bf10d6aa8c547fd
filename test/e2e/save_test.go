//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/git/gittest"
	"github.com/gitsave/gitsave/pkg/worker"
)

// mirror sets up, as the admin, a target on its own branch that mirrors ConfigMaps and
// Deployments of the namespace, and waits until the WatchRule is Ready.
func mirror(t *testing.T, ns, name string) (branch string) {
	t.Helper()
	return mirrorWithWindow(t, ns, name, "5m")
}

// mirrorWithWindow is mirror with another commit window.
func mirrorWithWindow(t *testing.T, ns, name, window string) (branch string) {
	t.Helper()
	branch = targetWithWindow(t, ns, name, window)
	admin := as(t, "admin", ns)
	admin.must(fmt.Sprintf(`apiVersion: config.gitsave.dev/v1alpha1
kind: WatchRule
metadata: {name: %[1]s}
spec:
  targetRef: {name: %[1]s}
  rules:
  - apiGroups: [""]
    resources: [configmaps]
  - apiGroups: [apps]
    resources: [deployments]
`, name), "apply", "-f", "-")
	admin.must("", "wait", "--for=condition=Ready", "watchrule/"+name, "--timeout=60s")
	admin.must("", "wait", "--for=condition=Ready", "gittarget/"+name, "--timeout=60s")
	return branch
}

// windowAuthor waits until the GitTarget reports an open window of author: the edits
// reached gitsave and are held, not committed.
func windowAuthor(t *testing.T, ns, target, author string) {
	t.Helper()
	as(t, "admin", ns).must("", "wait", "gittarget/"+target,
		"--for=jsonpath={.status.openWindowAuthor}="+author, "--timeout=60s")
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {value: %q}\n", name, value)
}

func deployment(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: app, image: nginx:1.27}]
`, name, replicas)
}

// commits lists the branch's commits on the remote, newest first.
func commits(t *testing.T, branch string) []gittest.CommitInfo {
	return gittest.Log(t, env["GIT_REMOTE_DIR"], branch)
}

func trailers(ns, name, uid string) string {
	return "\n\nCommit-Request: " + ns + "/" + name + "\nCommit-Request-UID: " + uid + "\n"
}

// UC1: jane edits; the window is long, so nothing is pushed until she presses Save.
func TestUC1Save(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	branch := mirror(t, ns, "dev")
	jane := as(t, "jane", ns)

	jane.must(configMap("web-config", "3"), "apply", "-f", "-")
	jane.must(deployment("web", 3), "apply", "-f", "-")
	windowAuthor(t, ns, "dev", "jane")
	assert.Empty(t, gittest.Head(t, env["GIT_REMOTE_DIR"], branch), "nothing reaches the remote before Save")

	message := "Scale web to 3\n\nBefore the launch."
	jane.must(saveManifest("save", "dev", message, 0), "create", "-f", "-")
	jane.must("", "wait", "--for=condition=Ready", "creq/save", "--timeout=90s")

	assert.Equal(t, "Committed", jane.must("", "get", "creq", "save", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}"))
	assert.Equal(t, "True", jane.must("", "get", "creq", "save", "-o", "jsonpath={.status.conditions[?(@.type==\"Pushed\")].status}"))
	sha := jane.must("", "get", "creq", "save", "-o", "jsonpath={.status.sha}")
	uid := jane.must("", "get", "creq", "save", "-o", "jsonpath={.metadata.uid}")

	log := commits(t, branch)
	require.Len(t, log, 1, "exactly one commit")
	assert.Equal(t, sha, log[0].SHA, "status.sha is the remote head")
	assert.Equal(t, message+trailers(ns, "save", uid), log[0].Message)
	assert.Equal(t, message, worker.MessageWithoutTrailers(log[0].Message), "the message is spec.message byte for byte")
	assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author)
	files := gittest.Files(t, env["GIT_REMOTE_DIR"], branch)
	assert.ElementsMatch(t, []string{
		"clusters/dev/" + ns + "/configmaps/web-config.yaml",
		"clusters/dev/" + ns + "/deployments.apps/web.yaml",
	}, files)
	content, ok := gittest.ShowFile(t, env["GIT_REMOTE_DIR"], branch, "clusters/dev/"+ns+"/deployments.apps/web.yaml")
	require.True(t, ok)
	assert.Contains(t, string(content), "replicas: 3")
	assert.NotContains(t, string(content), "status:", "status is never mirrored")
}

// UC2: one kubectl apply of a bundle with the CommitRequest first, in the middle or
// last → exactly one commit with the request's message and every resource.
func TestUC2Bundle(t *testing.T) {
	for _, position := range []string{"first", "middle", "last"} {
		t.Run(position, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			branch := mirror(t, ns, "dev")
			message := "Launch bundle (" + position + ")"
			docs := []string{deployment("api", 2), deployment("web", 3), configMap("settings", "on")}
			save := saveManifest("bundle", "dev", message, 8)
			switch position {
			case "first":
				docs = append([]string{save}, docs...)
			case "middle":
				docs = append(docs[:1], append([]string{save}, docs[1:]...)...)
			case "last":
				docs = append(docs, save)
			}
			jane := as(t, "jane", ns)
			jane.must(strings.Join(docs, "---\n"), "apply", "-f", "-")
			jane.must("", "wait", "--for=condition=Ready", "creq/bundle", "--timeout=90s")
			assert.Equal(t, "Committed", jane.must("", "get", "creq", "bundle", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}"))

			log := commits(t, branch)
			require.Len(t, log, 1, "exactly one commit for the bundle")
			assert.Equal(t, message, worker.MessageWithoutTrailers(log[0].Message))
			assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author)
			assert.ElementsMatch(t, []string{
				"clusters/dev/" + ns + "/deployments.apps/api.yaml",
				"clusters/dev/" + ns + "/deployments.apps/web.yaml",
				"clusters/dev/" + ns + "/configmaps/settings.yaml",
			}, gittest.Files(t, env["GIT_REMOTE_DIR"], branch))
		})
	}
}

// A Save with nothing pending is a benign no-commit.
func TestSaveWithNothingPending(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	branch := mirror(t, ns, "dev")
	jane := as(t, "jane", ns)
	jane.must(saveManifest("empty", "dev", "nothing here", 0), "create", "-f", "-")
	jane.must("", "wait", "--for=condition=Ready", "creq/empty", "--timeout=60s")
	assert.Equal(t, "NoWindowInGrace", jane.must("", "get", "creq", "empty", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}"))
	assert.Empty(t, commits(t, branch))
}

// jane's Save never takes bob's window.
func TestSaveNeverTakesAnotherAuthorsWindow(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	branch := mirror(t, ns, "dev")
	as(t, "bob", ns).must(configMap("bobs", "1"), "apply", "-f", "-")
	windowAuthor(t, ns, "dev", "bob")

	jane := as(t, "jane", ns)
	jane.must(saveManifest("janes", "dev", "jane's save", 0), "create", "-f", "-")
	jane.must("", "wait", "--for=condition=Ready", "creq/janes", "--timeout=60s")
	assert.Equal(t, "WindowMismatch", jane.must("", "get", "creq", "janes", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}"))
	assert.Empty(t, commits(t, branch), "bob's window was not committed")
	windowAuthor(t, ns, "dev", "bob")
}

// kubectl get -w shows the request's way to Ready.
func TestWatchShowsTransitions(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	mirror(t, ns, "dev")
	target(t, ns, "other")
	jane := as(t, "jane", ns)
	jane.must(configMap("watched", "1"), "apply", "-f", "-")
	windowAuthor(t, ns, "dev", "jane")
	// kubectl get -w lists, then watches from the list: a request that exists before
	// it starts proves, once printed, that the watch misses nothing after it.
	jane.must(saveManifest("marker", "other", "marks the start", 0), "create", "-f", "-")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := jane.cmd(ctx, "get", "commitrequests", "--watch", "--output-watch-events")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	var seen []string
	readUntil := func(want string) {
		t.Helper()
		for lines.Scan() {
			seen = append(seen, lines.Text())
			if strings.Contains(lines.Text(), want) {
				return
			}
		}
		t.Fatalf("the watch ended before %q; saw:\n%s", want, strings.Join(seen, "\n"))
	}
	readUntil("marker")

	jane.must(saveManifest("watched", "dev", "watch me", 3), "create", "-f", "-")
	readUntil("Committed")
	var mine []string
	for _, l := range seen {
		if strings.Contains(l, " watched ") {
			mine = append(mine, l)
		}
	}
	text := strings.Join(mine, "\n")
	assert.Regexp(t, `ADDED\s+watched\s+dev\s+jane\s+False`, text)
	assert.Regexp(t, `MODIFIED\s+watched\s+dev\s+jane\s+False\s+WaitingForCloseDelay`, text)
	assert.Regexp(t, `MODIFIED\s+watched\s+dev\s+jane\s+True\s+Committed\s+[0-9a-f]{8}`, text)
	jane.must("", "wait", "--for=condition=Ready", "creq/watched", "--timeout=30s")
}
