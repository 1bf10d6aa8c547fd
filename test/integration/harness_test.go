package integration

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/gitsave/gitsave/pkg/apiserver"
	"github.com/gitsave/gitsave/pkg/apiserver/apiservertest"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
	"github.com/gitsave/gitsave/pkg/save"
)

// targets is a fixed set of GitTargets, "namespace/name".
type targets map[string]bool

func (t targets) TargetExists(_ context.Context, namespace, name string) (bool, error) {
	return t[namespace+"/"+name], nil
}

// recordingSaver stands in for the branch workers: it records what the registry hands
// over so a test can drive the status through the registry's Reporter.
type recordingSaver struct {
	mu       sync.Mutex
	attached []save.Request
	canceled []types.UID
}

func (s *recordingSaver) Attach(r save.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attached = append(s.attached, r)
}

func (s *recordingSaver) Cancel(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.canceled = append(s.canceled, uid)
}

func (s *recordingSaver) requests() []save.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]save.Request(nil), s.attached...)
}

func (s *recordingSaver) cancellations() []types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]types.UID(nil), s.canceled...)
}

type env struct {
	*apiservertest.Server
	saver *recordingSaver
}

// startServer runs an in-process server that knows the GitTarget demo/dev.
func startServer(t *testing.T, configure func(*apiserver.Options)) *env {
	t.Helper()
	e := &env{saver: &recordingSaver{}}
	e.Server = apiservertest.Start(t, configure, func(c *apiserver.Config) {
		c.Extra.Storage.Targets = targets{"demo/dev": true, "demo/prod": true}
	})
	e.CommitRequests.SetSaver(e.saver)
	return e
}

func (e *env) client(t *testing.T, c *rest.Config) versioned.Interface {
	t.Helper()
	cs, err := versioned.NewForConfig(c)
	require.NoError(t, err)
	return cs
}

func (e *env) jane(t *testing.T) versioned.Interface {
	return e.client(t, e.As("jane", "editors"))
}

func withJSON(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}
