package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	configinformers "github.com/gitsave/gitsave/pkg/generated/informers/externalversions/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/git"
	"github.com/gitsave/gitsave/pkg/save"
)

// SecretGetter returns the data of a Secret.
type SecretGetter func(ctx context.Context, namespace, name string) (map[string][]byte, error)

// SecretsFromClient reads Secrets with a live GET each time, so a fixed
// Secret is used on the next reopen.
func SecretsFromClient(c kubernetes.Interface) SecretGetter {
	return func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
		s, err := c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
}

// ManagerConfig configures a Manager. Providers, Targets and Reporter are
// required; Secrets is required as soon as a GitProvider has a secretRef.
type ManagerConfig struct {
	Providers configinformers.GitProviderInformer
	Targets   configinformers.GitTargetInformer
	Secrets   SecretGetter
	// DataDir holds one on-disk repository cache per worker; "" keeps them in
	// memory (a restart then clones again).
	DataDir  string
	Reporter save.Reporter
	// Worker is the template of every worker's Config (clock, timeouts,
	// backoff); URL, Branch, Open and Reporter are filled in per worker.
	Worker Config
	// ParkTimeout is how long past its deadline a request is kept for a
	// target that has no worker (unknown yet, or its GitProvider missing)
	// before it resolves (default 30s).
	ParkTimeout time.Duration
	// OpenRepo opens a repository (default git.Open).
	OpenRepo func(ctx context.Context, o git.Options) (Repository, error)
	Logger   *logr.Logger
}

// workerKey identifies a worker: a branch of a repository, pushed with one
// set of credentials. The credentials are part of the key on purpose: a
// GitProvider in another namespace naming the same URL must not borrow this
// namespace's Secret. Two such workers on one branch are just two writers;
// compare-and-swap and replay keep them correct.
type workerKey struct {
	URL, Branch string
	Credentials string // "namespace/secret", "" for none
}

// placement is where a target is served.
type placement struct {
	key      workerKey
	config   TargetConfig
	provider string // namespace/name
}

// Problem is why a GitTarget has no worker.
type Problem struct {
	Reason, Message string
}

// Manager keeps one Worker per branch (and credentials), routes edits,
// resyncs and CommitRequests to them by GitTarget, and stops workers no
// target uses. It implements save.Saver.
type Manager struct {
	cfg   ManagerConfig
	clock clock.WithDelayedExecution
	log   logr.Logger
	kick  chan struct{}

	mu       sync.Mutex
	workers  map[workerKey]*Worker
	placed   map[string]placement // by GitTarget key
	problems map[string]Problem   // GitTargets that cannot be served
	parked   map[types.UID]save.Request
	stopping sync.WaitGroup
	stopped  bool

	routesMu sync.Mutex
	routes   map[types.UID]string // request → GitTarget key, until resolved
}

var _ save.Saver = (*Manager)(nil)

// NewManager registers on the informers; call Run to start serving.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Providers == nil || cfg.Targets == nil || cfg.Reporter == nil {
		return nil, errors.New("worker: Providers, Targets and Reporter are required")
	}
	if cfg.Worker.Clock == nil {
		cfg.Worker.Clock = clock.RealClock{}
	}
	if cfg.ParkTimeout <= 0 {
		cfg.ParkTimeout = 30 * time.Second
	}
	if cfg.OpenRepo == nil {
		cfg.OpenRepo = func(ctx context.Context, o git.Options) (Repository, error) {
			r, err := git.Open(ctx, o)
			if err != nil {
				return nil, err
			}
			return r, nil
		}
	}
	log := klog.Background().WithName("worker-manager")
	if cfg.Logger != nil {
		log = *cfg.Logger
	}
	m := &Manager{
		cfg:      cfg,
		clock:    cfg.Worker.Clock,
		log:      log,
		kick:     make(chan struct{}, 1),
		workers:  map[workerKey]*Worker{},
		placed:   map[string]placement{},
		problems: map[string]Problem{},
		parked:   map[types.UID]save.Request{},
		routes:   map[types.UID]string{},
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.poke() },
		UpdateFunc: func(any, any) { m.poke() },
		DeleteFunc: func(any) { m.poke() },
	}
	if _, err := cfg.Providers.Informer().AddEventHandler(h); err != nil {
		return nil, err
	}
	if _, err := cfg.Targets.Informer().AddEventHandler(h); err != nil {
		return nil, err
	}
	return m, nil
}

// parkCheck is how often parked requests are re-examined without a config
// change.
const parkCheck = 5 * time.Second

// Run reconciles on every GitProvider/GitTarget change until ctx ends, then
// stops every worker. Start the informers before (or with) Run.
func (m *Manager) Run(ctx context.Context) {
	m.Reconcile()
	for {
		select {
		case <-ctx.Done():
			m.Stop()
			return
		case <-m.kick:
		case <-m.clock.After(parkCheck):
		}
		m.Reconcile()
	}
}

func (m *Manager) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Attach routes a CommitRequest to its target's worker. A request for a
// target without a worker is parked (WaitingForWindow, with the reason in
// the message) until one starts or ParkTimeout passes.
func (m *Manager) Attach(req save.Request) {
	target := requestTarget(req)
	m.routesMu.Lock()
	m.routes[req.UID] = target
	m.routesMu.Unlock()

	m.mu.Lock()
	w := m.workerFor(target)
	problem, known := m.problems[target]
	stopped := m.stopped
	if w == nil && !stopped {
		m.parked[req.UID] = req
	}
	m.mu.Unlock()

	switch {
	case w != nil:
		w.Attach(req)
	case stopped:
		m.report(req.UID, save.Progress{Reason: v1alpha1.ReasonWorkerStopped})
	default:
		msg := "GitTarget " + target + " is not known yet"
		if known {
			msg = problem.Message
		}
		m.report(req.UID, save.Progress{Reason: v1alpha1.ReasonWaitingForWindow, Message: msg})
		m.poke()
	}
}

// Cancel detaches a deleted CommitRequest.
func (m *Manager) Cancel(uid types.UID) {
	m.routesMu.Lock()
	target, ok := m.routes[uid]
	delete(m.routes, uid)
	m.routesMu.Unlock()
	m.mu.Lock()
	delete(m.parked, uid)
	var w *Worker
	if ok {
		w = m.workerFor(target)
	}
	m.mu.Unlock()
	if w != nil {
		w.Cancel(uid)
	}
}

// Submit routes an edit to its target's worker; edits for a target without a
// worker are dropped (the target's first resync restores them).
func (m *Manager) Submit(ev Event) {
	if w := m.worker(ev.Target); w != nil {
		w.Submit(ev)
	}
}

// Resync routes a target's live state to its worker.
func (m *Manager) Resync(b ResyncBatch) {
	if w := m.worker(b.Target); w != nil {
		w.Resync(b)
	}
}

func (m *Manager) worker(target string) *Worker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workerFor(target)
}

func (m *Manager) workerFor(target string) *Worker {
	if pl, ok := m.placed[target]; ok {
		return m.workers[pl.key]
	}
	return nil
}

// report forwards a worker's report, forgetting the route of a resolved
// request.
func (m *Manager) report(uid types.UID, p save.Progress) {
	if terminalReason(p.Reason) {
		m.routesMu.Lock()
		delete(m.routes, uid)
		m.routesMu.Unlock()
	}
	m.cfg.Reporter.Report(uid, p)
}

type reporterFunc func(types.UID, save.Progress)

func (f reporterFunc) Report(uid types.UID, p save.Progress) { f(uid, p) }

func terminalReason(r string) bool {
	switch r {
	case v1alpha1.ReasonCommitted, v1alpha1.ReasonNoWindowInGrace, v1alpha1.ReasonWindowMismatch,
		v1alpha1.ReasonAlreadyPresent, v1alpha1.ReasonCommitFailed, v1alpha1.ReasonPushFailed,
		v1alpha1.ReasonTargetDeleted, v1alpha1.ReasonWorkerStopped:
		return true
	}
	return false
}

// Reconcile makes the workers match the GitTargets and GitProviders in the
// informer caches, and hands parked requests over (or ends them).
func (m *Manager) Reconcile() {
	desired, problems := m.desired()
	type handover struct {
		w   *Worker
		req save.Request
	}
	var (
		toStop   []*Worker
		handOver []handover
		expired  []save.Request
	)
	now := m.clock.Now()

	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	for name, pl := range m.placed {
		if d, ok := desired[name]; ok && d.key == pl.key {
			continue
		}
		// Removed, or moved to another branch or provider: its requests that
		// are not committed yet end TargetDeleted on the old worker.
		m.workers[pl.key].RemoveTarget(name)
		delete(m.placed, name)
	}
	for name, d := range desired {
		w := m.workers[d.key]
		if w == nil {
			var err error
			if w, err = m.startWorker(d.key); err != nil {
				problems[name] = Problem{Reason: ReasonRemoteUnreachable, Message: err.Error()}
				continue
			}
			m.workers[d.key] = w
		}
		if prev, ok := m.placed[name]; !ok || prev.config != d.config {
			w.SetTarget(d.config)
		}
		m.placed[name] = d
	}
	used := map[workerKey]bool{}
	for _, pl := range m.placed {
		used[pl.key] = true
	}
	for k, w := range m.workers {
		if !used[k] {
			delete(m.workers, k)
			toStop = append(toStop, w)
		}
	}
	m.problems = problems
	for uid, req := range m.parked {
		target := requestTarget(req)
		if w := m.workerFor(target); w != nil {
			handOver = append(handOver, handover{w, req})
			delete(m.parked, uid)
			continue
		}
		if now.Before(req.Received.Add(req.CloseDelay + m.cfg.ParkTimeout)) {
			continue
		}
		delete(m.parked, uid)
		expired = append(expired, req)
	}
	m.stopping.Add(len(toStop))
	m.mu.Unlock()

	for _, h := range handOver {
		h.w.Attach(h.req)
	}
	for _, req := range expired {
		// A target that exists but cannot be served needs a person (Stalled);
		// a target that never showed up is gone.
		if p, ok := problems[requestTarget(req)]; ok {
			m.report(req.UID, save.Progress{Reason: v1alpha1.ReasonPushFailed, Message: p.Message})
		} else {
			m.report(req.UID, save.Progress{Reason: v1alpha1.ReasonTargetDeleted})
		}
	}
	for _, w := range toStop {
		go func() {
			defer m.stopping.Done()
			w.Stop()
		}()
	}
}

// desired reads the caches: where each GitTarget should be served, and why
// the others cannot be.
func (m *Manager) desired() (map[string]placement, map[string]Problem) {
	desired, problems := map[string]placement{}, map[string]Problem{}
	targets, err := m.cfg.Targets.Lister().List(labels.Everything())
	if err != nil {
		m.log.Error(err, "list GitTargets")
		return desired, problems
	}
	for _, t := range targets {
		name := t.Namespace + "/" + t.Name
		if t.DeletionTimestamp != nil {
			continue
		}
		p, err := m.cfg.Providers.Lister().GitProviders(t.Namespace).Get(t.Spec.ProviderRef.Name)
		if err != nil {
			problems[name] = Problem{Reason: ReasonProviderNotFound,
				Message: fmt.Sprintf("GitProvider %s/%s not found", t.Namespace, t.Spec.ProviderRef.Name)}
			continue
		}
		desired[name] = placementOf(t, p)
	}
	return desired, problems
}

func placementOf(t *configv1alpha1.GitTarget, p *configv1alpha1.GitProvider) placement {
	branch := t.Spec.Branch
	if branch == "" {
		branch = "main"
	}
	key := workerKey{URL: p.Spec.URL, Branch: branch}
	if p.Spec.SecretRef != nil {
		key.Credentials = p.Namespace + "/" + p.Spec.SecretRef.Name
	}
	committer := git.Identity{Name: "gitsave", Email: "gitsave@noreply.gitsave.dev"}
	if c := p.Spec.Committer; c != nil {
		committer = git.Identity{Name: c.Name, Email: c.Email}
	}
	window := t.Spec.CommitWindow.Duration
	if window <= 0 {
		window = time.Minute
	}
	return placement{
		key:      key,
		provider: p.Namespace + "/" + p.Name,
		config: TargetConfig{
			Name:                t.Namespace + "/" + t.Name,
			Path:                strings.Trim(t.Spec.Path, "/"),
			CommitWindow:        window,
			MaxWindowEvents:     int(t.Spec.MaxWindowEvents),
			AuthorEmailTemplate: p.Spec.AuthorEmailTemplate,
			Committer:           committer,
		},
	}
}

func (m *Manager) startWorker(k workerKey) (*Worker, error) {
	cfg := m.cfg.Worker
	cfg.URL, cfg.Branch = k.URL, k.Branch
	cfg.Reporter = reporterFunc(m.report)
	cfg.Open = m.opener(k)
	m.log.Info("starting worker", "url", k.URL, "branch", k.Branch)
	return New(cfg)
}

// opener reads the credentials at every open, so a fixed Secret is used by
// the next attempt.
func (m *Manager) opener(k workerKey) Opener {
	return func(ctx context.Context) (Repository, error) {
		var data map[string][]byte
		if k.Credentials != "" {
			if m.cfg.Secrets == nil {
				return nil, fmt.Errorf("%w: no Secret reader configured for %s", git.ErrAuth, k.Credentials)
			}
			ns, name, _ := strings.Cut(k.Credentials, "/")
			d, err := m.cfg.Secrets(ctx, ns, name)
			switch {
			case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
				return nil, fmt.Errorf("%w: Secret %s: %w", git.ErrAuth, k.Credentials, err)
			case err != nil:
				return nil, fmt.Errorf("read Secret %s: %w", k.Credentials, err)
			}
			data = d
		}
		auth, err := git.AuthFromSecret(k.URL, data)
		if err != nil {
			if k.Credentials != "" {
				return nil, fmt.Errorf("%w: Secret %s: %w", git.ErrAuth, k.Credentials, err)
			}
			return nil, err
		}
		dir := ""
		if m.cfg.DataDir != "" {
			sum := sha256.Sum256([]byte(k.URL + "\x00" + k.Branch + "\x00" + k.Credentials))
			dir = filepath.Join(m.cfg.DataDir, hex.EncodeToString(sum[:10]))
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
		}
		return m.cfg.OpenRepo(ctx, git.Options{URL: k.URL, Branch: k.Branch, Auth: auth, Dir: dir})
	}
}

// Stop stops every worker (each finalizes, pushes once more and resolves
// what is left WorkerStopped) and ends parked requests WorkerStopped.
func (m *Manager) Stop() {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		m.stopping.Wait()
		return
	}
	m.stopped = true
	workers := make([]*Worker, 0, len(m.workers))
	for _, w := range m.workers {
		workers = append(workers, w)
	}
	m.workers, m.placed = map[workerKey]*Worker{}, map[string]placement{}
	parked := m.parked
	m.parked = map[types.UID]save.Request{}
	m.stopping.Add(len(workers))
	m.mu.Unlock()

	for _, w := range workers {
		go func() {
			defer m.stopping.Done()
			w.Stop()
		}()
	}
	for uid := range parked {
		m.report(uid, save.Progress{Reason: v1alpha1.ReasonWorkerStopped})
	}
	m.stopping.Wait()
}

// TargetState is what status writing needs to know about a GitTarget.
type TargetState struct {
	// Served is true when a worker serves the target; Snapshot is then its
	// worker's state.
	Served   bool
	Snapshot Snapshot
	// Problem says why the target is not served (Served false, Known true).
	Problem Problem
	Known   bool
}

// TargetState reports on the GitTarget "namespace/name".
func (m *Manager) TargetState(target string) TargetState {
	m.mu.Lock()
	w := m.workerFor(target)
	p, known := m.problems[target]
	m.mu.Unlock()
	if w != nil {
		return TargetState{Served: true, Known: true, Snapshot: w.Snapshot()}
	}
	return TargetState{Problem: p, Known: known}
}

// ProviderSnapshots returns the state of every worker serving a target of the
// GitProvider "namespace/name".
func (m *Manager) ProviderSnapshots(provider string) []Snapshot {
	m.mu.Lock()
	seen := map[workerKey]bool{}
	var ws []*Worker
	for _, pl := range m.placed {
		if pl.provider == provider && !seen[pl.key] {
			seen[pl.key] = true
			ws = append(ws, m.workers[pl.key])
		}
	}
	m.mu.Unlock()
	out := make([]Snapshot, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Snapshot())
	}
	return out
}

// Sync waits until every worker is idle (tests).
func (m *Manager) Sync() {
	m.mu.Lock()
	ws := make([]*Worker, 0, len(m.workers))
	for _, w := range m.workers {
		ws = append(ws, w)
	}
	m.mu.Unlock()
	for _, w := range ws {
		w.Sync()
	}
}

// WaitStopped waits for workers being stopped after their last target went.
func (m *Manager) WaitStopped() { m.stopping.Wait() }
