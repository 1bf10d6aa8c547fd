package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned/fake"
	"github.com/gitsave/gitsave/pkg/generated/informers/externalversions"
	configinformers "github.com/gitsave/gitsave/pkg/generated/informers/externalversions/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/git/gittest"
	"github.com/gitsave/gitsave/pkg/save"
)

// managerEnv drives a Manager from informer caches filled by hand (no
// informer goroutines), so every Reconcile is explicit.
type managerEnv struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	rep    *recorder
	client *fake.Clientset
	prov   configinformers.GitProviderInformer
	tgt    configinformers.GitTargetInformer
	m      *Manager
	dir    string
}

func newManagerEnv(t *testing.T, secrets ...runtime.Object) *managerEnv {
	t.Helper()
	e := &managerEnv{
		t:      t,
		clock:  clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		rep:    &recorder{},
		client: fake.NewSimpleClientset(),
		dir:    gittest.NewBareRepo(t),
	}
	f := externalversions.NewSharedInformerFactory(e.client, 0)
	e.prov, e.tgt = f.Config().V1alpha1().GitProviders(), f.Config().V1alpha1().GitTargets()
	kube := kubefake.NewSimpleClientset(secrets...)
	m, err := NewManager(ManagerConfig{
		Providers: e.prov, Targets: e.tgt, Reporter: e.rep,
		Secrets: SecretsFromClient(kube),
		Worker:  Config{Clock: e.clock},
	})
	require.NoError(t, err)
	e.m = m
	t.Cleanup(m.Stop)
	return e
}

func (e *managerEnv) addProvider(name, url, secret string) {
	p := &configv1alpha1.GitProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
		Spec:       configv1alpha1.GitProviderSpec{URL: url},
	}
	if secret != "" {
		p.Spec.SecretRef = &configv1alpha1.LocalObjectReference{Name: secret}
	}
	require.NoError(e.t, e.prov.Informer().GetIndexer().Add(p))
	_, err := e.client.ConfigV1alpha1().GitProviders("demo").Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

func (e *managerEnv) addTarget(name, provider string) *configv1alpha1.GitTarget {
	tg := &configv1alpha1.GitTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, Generation: 1},
		Spec: configv1alpha1.GitTargetSpec{
			ProviderRef:  configv1alpha1.LocalObjectReference{Name: provider},
			Branch:       "main",
			Path:         testFolder,
			CommitWindow: metav1.Duration{Duration: testWindow},
		},
	}
	require.NoError(e.t, e.tgt.Informer().GetIndexer().Add(tg))
	_, err := e.client.ConfigV1alpha1().GitTargets("demo").Create(context.Background(), tg, metav1.CreateOptions{})
	require.NoError(e.t, err)
	return tg
}

func (e *managerEnv) reconcile() {
	e.m.Reconcile()
	e.m.Sync()
}

func (e *managerEnv) request(name, target string, closeDelay time.Duration) save.Request {
	return save.Request{UID: uid(name), Namespace: "demo", Name: name, Author: save.Author{Username: "jane"},
		Target: target, Message: "Saved " + name, CloseDelay: closeDelay, Received: e.clock.Now()}
}

func (e *managerEnv) edit(target, name string) {
	e.m.Submit(Event{Target: "demo/" + target, Path: path(name), Content: []byte(name),
		Author: save.Author{Username: "jane"}, Observed: e.clock.Now()})
}

func (e *managerEnv) readyCondition(target string) *metav1.Condition {
	tg, err := e.client.ConfigV1alpha1().GitTargets("demo").Get(context.Background(), target, metav1.GetOptions{})
	require.NoError(e.t, err)
	return meta.FindStatusCondition(tg.Status.Conditions, ConditionReady)
}

func (e *managerEnv) writeStatus() {
	require.NoError(e.t, (&StatusWriter{Client: e.client, Manager: e.m}).SyncOnce(context.Background()))
}

func TestManagerRoutesEditsAndRequestsAndWritesStatus(t *testing.T) {
	e := newManagerEnv(t)
	e.addProvider("repo", e.dir, "")
	e.addTarget("dev", "repo")
	e.reconcile()

	e.edit("dev", "a")
	req := e.request("save", "dev", 0)
	e.m.Attach(req)
	e.m.Sync()
	out := e.rep.terminal(t, req.UID)
	require.Equal(t, v1alpha1.ReasonCommitted, out.Reason)
	assert.Equal(t, gittest.Head(t, e.dir, "main"), out.SHA)

	e.edit("dev", "b") // an open window shows in the status
	e.m.Sync()
	e.writeStatus()
	cond := e.readyCondition("dev")
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, ReasonReady, cond.Reason)
	tg, err := e.client.ConfigV1alpha1().GitTargets("demo").Get(context.Background(), "dev", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, out.SHA, tg.Status.LastPushedSHA)
	assert.Equal(t, "jane", tg.Status.OpenWindowAuthor)
	p, err := e.client.ConfigV1alpha1().GitProviders("demo").Get(context.Background(), "repo", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ReasonReady, meta.FindStatusCondition(p.Status.Conditions, ConditionReady).Reason)
}

// Two targets on one branch share a worker; removing the last one stops it.
func TestManagerSharesWorkerAndStopsUnusedOnes(t *testing.T) {
	e := newManagerEnv(t)
	e.addProvider("repo", e.dir, "")
	e.addTarget("dev", "repo")
	prod := e.addTarget("prod", "repo")
	e.reconcile()
	assert.Len(t, e.m.workers, 1)

	waiting := e.request("waiting", "prod", time.Minute)
	e.m.Attach(waiting)
	e.m.Sync()
	require.NoError(t, e.tgt.Informer().GetIndexer().Delete(prod))
	e.reconcile()
	assert.Equal(t, v1alpha1.ReasonTargetDeleted, e.rep.terminal(t, waiting.UID).Reason)
	assert.True(t, e.m.TargetState("demo/dev").Served)
	assert.False(t, e.m.TargetState("demo/prod").Served)

	dev, err := e.tgt.Lister().GitTargets("demo").Get("dev")
	require.NoError(t, err)
	require.NoError(t, e.tgt.Informer().GetIndexer().Delete(dev))
	e.m.Reconcile()
	e.m.WaitStopped()
	assert.Empty(t, e.m.workers)
}

// A request for a target the caches do not know yet is parked, then handed
// over when the target appears; a target that never appears ends it.
func TestManagerParksRequestsUntilTargetAppears(t *testing.T) {
	e := newManagerEnv(t)
	e.addProvider("repo", e.dir, "")
	req := e.request("early", "dev", 10*time.Second)
	e.m.Attach(req)
	assert.Equal(t, v1alpha1.ReasonWaitingForWindow, e.rep.last(req.UID).Reason)

	e.addTarget("dev", "repo")
	e.reconcile()
	e.edit("dev", "a")
	e.m.Sync()
	e.clock.Step(10 * time.Second)
	e.m.Sync()
	assert.Equal(t, v1alpha1.ReasonCommitted, e.rep.terminal(t, req.UID).Reason)

	ghost := e.request("ghost", "nowhere", 0)
	e.m.Attach(ghost)
	e.clock.Step(31 * time.Second)
	e.reconcile()
	assert.Equal(t, v1alpha1.ReasonTargetDeleted, e.rep.terminal(t, ghost.UID).Reason)
}

// A target whose GitProvider is missing is not served: its status says
// ProviderNotFound and its requests end Stalled (PushFailed) after parking.
func TestManagerProviderNotFound(t *testing.T) {
	e := newManagerEnv(t)
	e.addTarget("dev", "missing")
	e.reconcile()
	st := e.m.TargetState("demo/dev")
	assert.False(t, st.Served)
	assert.Equal(t, ReasonProviderNotFound, st.Problem.Reason)
	e.writeStatus()
	cond := e.readyCondition("dev")
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, ReasonProviderNotFound, cond.Reason)

	req := e.request("save", "dev", 0)
	e.m.Attach(req)
	e.clock.Step(31 * time.Second)
	e.reconcile()
	assert.Equal(t, v1alpha1.ReasonPushFailed, e.rep.terminal(t, req.UID).Reason)
}

// Credentials come from the provider's Secret at each open; a Secret
// without usable keys shows as AuthDenied and requests end PushFailed.
func TestManagerBadSecretIsAuthDenied(t *testing.T) {
	srv := gittest.NewServer(t, "", "gitsave", "s3cret")
	srv.NewRepo(t, "repo.git")
	e := newManagerEnv(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "creds"},
		Data:       map[string][]byte{"username": []byte("gitsave")}, // no password
	})
	e.addProvider("repo", srv.URL("repo.git"), "creds")
	e.addTarget("dev", "repo")
	e.reconcile()
	assert.Equal(t, RemoteAuthDenied, e.m.TargetState("demo/dev").Snapshot.Health)

	e.edit("dev", "a")
	req := e.request("save", "dev", 0)
	e.m.Attach(req)
	e.m.Sync()
	assert.Equal(t, v1alpha1.ReasonPushFailed, e.rep.terminal(t, req.UID).Reason)
	e.writeStatus()
	assert.Equal(t, ReasonAuthDenied, e.readyCondition("dev").Reason)
}

// Cancel reaches the worker holding the request: its window keeps the edit.
func TestManagerCancelRoutesToWorker(t *testing.T) {
	e := newManagerEnv(t)
	e.addProvider("repo", e.dir, "")
	e.addTarget("dev", "repo")
	e.reconcile()
	e.edit("dev", "a")
	req := e.request("save", "dev", time.Minute)
	e.m.Attach(req)
	e.m.Sync()
	e.m.Cancel(req.UID)
	e.m.Sync()
	e.clock.Step(time.Minute)
	e.m.Sync()
	for _, r := range e.rep.reasons(req.UID) {
		assert.False(t, terminalReason(r), r)
	}
	log := gittest.Log(t, e.dir, "main")
	require.Len(t, log, 1)
	_, _, has := RequestTrailers(log[0].Message)
	assert.False(t, has)
	assert.Empty(t, e.m.routes)
}
