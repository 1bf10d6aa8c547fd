// Package kubectltest runs the real kubectl from the PATH for tests, as a person would:
// one kubeconfig, a private discovery cache, stdin in, combined output back.
package kubectltest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Kubectl is one user's kubectl.
type Kubectl struct {
	Kubeconfig string
	// CacheDir keeps discovery apart from other users and servers (KUBECACHEDIR).
	CacheDir string
	// Namespace, when set, is passed as -n.
	Namespace string
}

// Command is kubectl with args, bound to ctx (for long-running commands such as -w).
func (k Kubectl) Command(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--kubeconfig", k.Kubeconfig}, args...)
	if k.Namespace != "" {
		full = append([]string{"-n", k.Namespace}, full...)
	}
	cmd := exec.CommandContext(ctx, "kubectl", full...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+k.CacheDir)
	return cmd
}

// Run runs kubectl with stdin and returns its combined output.
func (k Kubectl) Run(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := k.Command(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Must is Run that fails the test on an error.
func (k Kubectl) Must(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := k.Run(stdin, args...)
	require.NoError(t, err, "kubectl %s\n%s", strings.Join(args, " "), out)
	return out
}
