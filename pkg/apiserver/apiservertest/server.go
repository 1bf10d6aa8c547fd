// Package apiservertest runs gitsave-apiserver in-process for tests: a real generic
// API server on a loopback port, talked to with its loopback client and impersonation.
package apiservertest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/gitsave/gitsave/pkg/apiserver"
)

// Server is a running in-process gitsave-apiserver.
type Server struct {
	*apiserver.Server
	// Loopback is a privileged client config (system:masters).
	Loopback *rest.Config
	Options  *apiserver.Options
}

// Start runs a standalone server until the test ends. configure, if set, may change
// the options before they are applied and the configuration before the server is
// built (e.g. to set a TargetChecker or a clock).
func Start(t testing.TB, configure func(*apiserver.Options), configureServer func(*apiserver.Config)) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)

	opts := apiserver.NewOptions()
	opts.Standalone = true
	opts.DataDir = t.TempDir()
	opts.Recommended.SecureServing.Listener = ln
	opts.Recommended.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	opts.Recommended.SecureServing.ServerCert.CertDirectory = t.TempDir()
	if configure != nil {
		configure(opts)
	}
	require.NoError(t, opts.Validate())
	cfg, err := opts.Config()
	require.NoError(t, err)
	if configureServer != nil {
		configureServer(cfg)
	}
	srv, err := cfg.New()
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("gitsave-apiserver did not stop")
		}
	})

	s := &Server{Server: srv, Loopback: rest.CopyConfig(cfg.Generic.LoopbackClientConfig), Options: opts}
	waitReady(t, s.Loopback)
	return s
}

// As returns a client config that impersonates user in groups.
func (s *Server) As(user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(s.Loopback)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return c
}

func waitReady(t testing.TB, c *rest.Config) {
	t.Helper()
	client, err := rest.UnversionedRESTClientFor(withCodec(c))
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true,
		func(ctx context.Context) (bool, error) {
			res := client.Get().AbsPath("/readyz").Do(ctx)
			var code int
			res.StatusCode(&code)
			return code == 200, nil
		})
	require.NoError(t, err, "gitsave-apiserver did not become ready")
}
