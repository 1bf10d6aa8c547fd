package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/git"
	"github.com/gitsave/gitsave/pkg/git/gittest"
	"github.com/gitsave/gitsave/pkg/save"
)

const (
	testTarget = "demo/dev"
	testFolder = "clusters/dev"
	testWindow = time.Minute
)

var testCommitter = git.Identity{Name: "gitsave", Email: "gitsave@noreply.gitsave.dev"}

// recorder is a save.Reporter that keeps every report.
type recorder struct {
	mu   sync.Mutex
	byID map[types.UID][]save.Progress
}

func (r *recorder) Report(uid types.UID, p save.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[types.UID][]save.Progress{}
	}
	r.byID[uid] = append(r.byID[uid], p)
}

func (r *recorder) reasons(uid types.UID) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.byID[uid] {
		out = append(out, p.Reason)
	}
	return out
}

func (r *recorder) all(uid types.UID) []save.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]save.Progress(nil), r.byID[uid]...)
}

func (r *recorder) last(uid types.UID) save.Progress {
	all := r.all(uid)
	if len(all) == 0 {
		return save.Progress{}
	}
	return all[len(all)-1]
}

var terminalReasons = map[string]bool{
	v1alpha1.ReasonCommitted: true, v1alpha1.ReasonNoWindowInGrace: true, v1alpha1.ReasonWindowMismatch: true,
	v1alpha1.ReasonAlreadyPresent: true, v1alpha1.ReasonCommitFailed: true, v1alpha1.ReasonPushFailed: true,
	v1alpha1.ReasonTargetDeleted: true, v1alpha1.ReasonWorkerStopped: true,
}

// terminal returns the one terminal report of uid, failing if there is not
// exactly one or if anything was reported after it.
func (r *recorder) terminal(t *testing.T, uid types.UID) save.Progress {
	t.Helper()
	all := r.all(uid)
	var out []save.Progress
	for _, p := range all {
		if terminalReasons[p.Reason] {
			out = append(out, p)
		}
	}
	require.Len(t, out, 1, "terminal reports of %s: %v", uid, r.reasons(uid))
	require.Equal(t, out[0], all[len(all)-1], "reports after the terminal one: %v", r.reasons(uid))
	return out[0]
}

// faults injects failures into the repository the worker opens.
type faults struct {
	mu       sync.Mutex
	open     []error
	push     []error
	pushes   int // pushes that reached the real repository
	attempts int // every push call
	persist  []error
	// onPersist, if set, runs at every Persist call (with mu held).
	onPersist func()
}

func (f *faults) failPersist(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.persist = append(f.persist, errs...)
}

func (f *faults) failOpen(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open = append(f.open, errs...)
}

func (f *faults) failPush(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.push = append(f.push, errs...)
}

func (f *faults) pushCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pushes
}

func (f *faults) attemptCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts
}

func pop(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

// faultyRepo is the real in-memory repository with injectable push failures.
type faultyRepo struct {
	Repository
	f *faults
}

func (r *faultyRepo) Push(ctx context.Context) (plumbing.Hash, error) {
	r.f.mu.Lock()
	r.f.attempts++
	err := pop(&r.f.push)
	if err == nil {
		r.f.pushes++
	}
	r.f.mu.Unlock()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.Repository.Push(ctx)
}

func (r *faultyRepo) Persist() error {
	r.f.mu.Lock()
	if r.f.onPersist != nil {
		r.f.onPersist()
	}
	err := pop(&r.f.persist)
	r.f.mu.Unlock()
	if err != nil {
		return err
	}
	return r.Repository.Persist()
}

// env is a worker on a fake clock, mirroring testTarget into a bare repository.
type env struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	rep    *recorder
	faults *faults
	dir    string // the bare repository, for inspection
	url    string
	auth   transport.AuthMethod
	w      *Worker
}

type envOption func(*env, *Config, *TargetConfig)

func withMaxEvents(n int) envOption {
	return func(_ *env, _ *Config, tc *TargetConfig) { tc.MaxWindowEvents = n }
}

func withRemote(url, dir string, auth transport.AuthMethod) envOption {
	return func(e *env, _ *Config, _ *TargetConfig) { e.url, e.dir, e.auth = url, dir, auth }
}

func withOpenFailures(errs ...error) envOption {
	return func(e *env, _ *Config, _ *TargetConfig) { e.faults.failOpen(errs...) }
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{
		t:      t,
		clock:  clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		rep:    &recorder{},
		faults: &faults{},
	}
	tc := TargetConfig{Name: testTarget, Path: testFolder, CommitWindow: testWindow, Committer: testCommitter}
	cfg := Config{Branch: gittest.DefaultBranch, Reporter: e.rep}
	for _, o := range opts {
		o(e, &cfg, &tc)
	}
	if e.dir == "" {
		e.dir = gittest.NewBareRepo(t)
		e.url = e.dir
	}
	cfg.URL, cfg.Clock = e.url, e.clock
	cfg.Open = func(ctx context.Context) (Repository, error) {
		e.faults.mu.Lock()
		err := pop(&e.faults.open)
		e.faults.mu.Unlock()
		if err != nil {
			return nil, err
		}
		r, err := git.Open(ctx, git.Options{URL: e.url, Branch: gittest.DefaultBranch, Auth: e.auth})
		if err != nil {
			return nil, err
		}
		return &faultyRepo{Repository: r, f: e.faults}, nil
	}
	w, err := New(cfg)
	require.NoError(t, err)
	e.w = w
	t.Cleanup(w.Stop)
	w.SetTarget(tc)
	w.Sync()
	return e
}

func path(name string) string { return testFolder + "/demo/configmaps/" + name + ".yaml" }

func key(name string) save.EditKey {
	return save.EditKey{Resource: "configmaps", Namespace: "demo", Name: name}
}

// edit queues an edit of ConfigMap name by author (content "" deletes).
func (e *env) edit(author, name, content string) {
	ev := Event{Target: testTarget, Path: path(name), Author: save.Author{Username: author}, Key: key(name), Observed: e.clock.Now()}
	if content != "" {
		ev.Content = []byte(content)
	}
	e.w.Submit(ev)
}

func uid(name string) types.UID { return types.UID("uid-" + name) }

func (e *env) request(name, author, msg string, closeDelay time.Duration, barrier ...save.EditKey) save.Request {
	return save.Request{
		UID: uid(name), Namespace: "demo", Name: name, Author: save.Author{Username: author},
		Target: "dev", Message: msg, CloseDelay: closeDelay, Received: e.clock.Now(), Barrier: barrier,
	}
}

func (e *env) sync() { e.w.Sync() }

// step lets the worker handle what is queued, advances the fake clock
// (firing due timers) and waits until the worker is idle again.
func (e *env) step(d time.Duration) {
	e.w.Sync()
	e.clock.Step(d)
	e.w.Sync()
}

func (e *env) head() string { return gittest.Head(e.t, e.dir, gittest.DefaultBranch) }

func (e *env) log() []gittest.CommitInfo { return gittest.Log(e.t, e.dir, gittest.DefaultBranch) }

func (e *env) file(name string) (string, bool) {
	b, ok := gittest.ShowFile(e.t, e.dir, "refs/heads/"+gittest.DefaultBranch, path(name))
	return string(b), ok
}

var errTransient = errors.New("connection reset by peer")

func withMaxPushAttempts(n int) envOption {
	return func(_ *env, cfg *Config, _ *TargetConfig) { cfg.MaxPushAttempts = n }
}
