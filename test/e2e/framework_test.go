//go:build e2e

// Package e2e drives gitsave on the local control plane (make local-up) the way a
// person does: the real kubectl as jane, bob and carol, and git on the remote.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gitsave/gitsave/test/kubectltest"
	"github.com/gitsave/gitsave/test/localenv"
)

// env is what hack/local/up.sh wrote to _output/local/env.sh.
var env map[string]string

func TestMain(m *testing.M) {
	path := os.Getenv("GITSAVE_LOCAL_ENV")
	if path == "" {
		path = "../../_output/local/env.sh"
	}
	var err error
	if env, err = localenv.Read(path); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\nthe e2e suite runs on the local control plane: use `make e2e`\n", err)
		os.Exit(1)
	}
	if out, err := as(nil, "admin", "").run(editorRole, "apply", "-f", "-"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: applying the editor role: %v\n%s", err, out)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// user is a person at a terminal with their own kubeconfig.
type user struct {
	t    *testing.T
	name string
	ns   string
}

func as(t *testing.T, name, namespace string) user { return user{t: t, name: name, ns: namespace} }

func (u user) kubectl() kubectltest.Kubectl {
	return kubectltest.Kubectl{
		Kubeconfig: env["KUBECONFIG_"+strings.ToUpper(u.name)],
		CacheDir:   filepath.Join(os.TempDir(), "gitsave-e2e-kubecache-"+u.name),
		Namespace:  u.ns,
	}
}

func (u user) cmd(ctx context.Context, args ...string) *exec.Cmd {
	return u.kubectl().Command(ctx, args...)
}

// run is kubectl with stdin, returning combined output.
func (u user) run(stdin string, args ...string) (string, error) {
	return u.kubectl().Run(stdin, args...)
}

func (u user) must(stdin string, args ...string) string {
	u.t.Helper()
	return u.kubectl().Must(u.t, stdin, args...)
}

// namespace makes a fresh namespace where jane and bob (group editors) may edit, with
// the Git credentials Secret, and deletes it when the test ends.
func namespace(t *testing.T) string {
	t.Helper()
	ns := "e2e-" + rand.String(6)
	admin := as(t, "admin", "")
	admin.must(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editors, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gitsave-e2e-editor}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: editors}
---
apiVersion: v1
kind: Secret
metadata: {name: git-creds, namespace: %[1]s}
type: kubernetes.io/basic-auth
stringData: {username: %[2]q, password: %[3]q}
`, ns, env["GIT_USERNAME"], env["GIT_PASSWORD"]), "apply", "-f", "-")
	t.Cleanup(func() { _, _ = admin.run("", "delete", "namespace", ns, "--wait=false") })
	return ns
}

// editorRole is what the group editors may do in an e2e namespace: edit the watched
// kinds, save, and read gitsave's configuration (which the admin writes).
const editorRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gitsave-e2e-editor}
rules:
- apiGroups: [""]
  resources: [configmaps, secrets, services]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [apps]
  resources: [deployments, deployments/scale]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [gitsave.dev]
  resources: [commitrequests]
  verbs: [get, list, watch, create, delete]
- apiGroups: [config.gitsave.dev]
  resources: [gitproviders, gittargets, watchrules]
  verbs: [get, list, watch]
`
