package integration

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/save"
	"github.com/gitsave/gitsave/test/kubectltest"
)

// kubectl runs the real kubectl from the PATH against the in-process server as jane.
type kubectl struct {
	t          *testing.T
	kubeconfig string
}

func newKubectl(t *testing.T, e *env) kubectl {
	t.Helper()
	_, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl must be on the PATH")
	c := e.Loopback
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["gitsave"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData, TLSServerName: c.ServerName}
	cfg.AuthInfos["loopback"] = &clientcmdapi.AuthInfo{Token: c.BearerToken, Impersonate: "jane", ImpersonateGroups: []string{"editors"}}
	cfg.Contexts["jane"] = &clientcmdapi.Context{Cluster: "gitsave", AuthInfo: "loopback", Namespace: "demo"}
	cfg.CurrentContext = "jane"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return kubectl{t: t, kubeconfig: path}
}

func (k kubectl) tool() kubectltest.Kubectl {
	// A private discovery cache: every test server is new.
	return kubectltest.Kubectl{Kubeconfig: k.kubeconfig, CacheDir: filepath.Join(filepath.Dir(k.kubeconfig), "cache")}
}

func (k kubectl) cmd(ctx context.Context, args ...string) *exec.Cmd {
	return k.tool().Command(ctx, args...)
}

func (k kubectl) run(stdin string, args ...string) (string, error) {
	return k.tool().Run(stdin, args...)
}

func (k kubectl) must(stdin string, args ...string) string {
	k.t.Helper()
	return k.tool().Must(k.t, stdin, args...)
}

const manifest = `apiVersion: gitsave.dev/v1alpha1
kind: CommitRequest
metadata:
  name: save-web
spec:
  targetRef:
    name: dev
  message: "Scale web to 3"
`

func TestKubectl(t *testing.T) {
	e := startServer(t, nil)
	k := newKubectl(t, e)

	k.must(manifest, "create", "-f", "-")

	t.Run("get prints the columns", func(t *testing.T) {
		out := k.must("", "get", "commitrequests")
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		assert.Equal(t, []string{"NAME", "TARGET", "AUTHOR", "READY", "REASON", "SHA", "AGE"}, header)
		assert.Regexp(t, `save-web\s+dev\s+jane\s+False\s+WaitingForWindow`, out)

		wide := k.must("", "get", "creq", "-o", "wide")
		assert.Contains(t, strings.SplitN(wide, "\n", 2)[0], "PUSHED")
		assert.Contains(t, strings.SplitN(wide, "\n", 2)[0], "BRANCH")
		assert.Contains(t, strings.SplitN(wide, "\n", 2)[0], "FINALIZED-BY")
		assert.Contains(t, k.must("", "get", "gitsave"), "save-web", "the gitsave category lists CommitRequests")
	})

	t.Run("wait for Attributed returns at once", func(t *testing.T) {
		out := k.must("", "wait", "--for=condition=Attributed", "commitrequest/save-web", "--timeout=30s")
		assert.Contains(t, out, "condition met")
	})

	t.Run("explain documents the spec", func(t *testing.T) {
		out := k.must("", "explain", "commitrequest.spec")
		assert.Contains(t, out, "closeDelaySeconds")
		assert.Contains(t, out, "targetRef")
		msg := k.must("", "explain", "commitrequest.spec.message")
		assert.Contains(t, msg, "verbatim")
	})

	t.Run("server-side apply twice is a no-op the second time", func(t *testing.T) {
		applied := strings.Replace(manifest, "save-web", "applied", 1)
		k.must(applied, "apply", "--server-side", "-f", "-")
		rv1 := k.must("", "get", "creq", "applied", "-o", "jsonpath={.metadata.resourceVersion}")
		out := k.must(applied, "apply", "--server-side", "-f", "-")
		assert.Contains(t, out, "serverside-applied")
		rv2 := k.must("", "get", "creq", "applied", "-o", "jsonpath={.metadata.resourceVersion}")
		assert.Equal(t, rv1, rv2, "an unchanged apply must not bump the resourceVersion")

		changed := strings.Replace(applied, "Scale web to 3", "another message", 1)
		out, err := k.run(changed, "apply", "--server-side", "-f", "-")
		require.Error(t, err)
		assert.Contains(t, out, "spec: Invalid value")
		assert.Contains(t, out, "field is immutable")
	})

	t.Run("bad input prints the 422 naming the field", func(t *testing.T) {
		bad := strings.Replace(manifest, "name: dev", "name: nope", 1)
		bad = strings.Replace(bad, "save-web", "bad", 1)
		out, err := k.run(bad, "create", "-f", "-")
		require.Error(t, err)
		assert.Contains(t, out, `spec.targetRef.name: Not found: "nope"`)
	})

	t.Run("get -w streams the transitions", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := k.cmd(ctx, "get", "creq", "save-web", "-w", "--output-watch-events")
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		defer func() { cancel(); _ = cmd.Wait() }()
		lines := make(chan string, 16)
		go func() {
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				lines <- s.Text()
			}
			close(lines)
		}()
		waitLine(t, lines, "ADDED")

		cr, err := e.jane(t).GitsaveV1alpha1().CommitRequests("demo").Get(context.Background(), "save-web", metav1.GetOptions{})
		require.NoError(t, err)
		e.CommitRequests.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonAwaitingPush})
		assert.Regexp(t, `MODIFIED\s+save-web\s+dev\s+jane\s+False\s+AwaitingPush`, waitLine(t, lines, "AwaitingPush"))
		e.CommitRequests.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonCommitted, SHA: "0123456789abcdef0123", Branch: "main"})
		assert.Regexp(t, `MODIFIED\s+save-web\s+dev\s+jane\s+True\s+Committed\s+01234567`, waitLine(t, lines, "Committed"))
	})
}

// waitLine returns the first line containing want, failing if the stream ends first.
func waitLine(t *testing.T, lines <-chan string, want string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended before %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("no line with %q", want)
		}
	}
}
