package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/attribution"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
	configinformers "github.com/gitsave/gitsave/pkg/generated/informers/externalversions/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/save"
)

// DefaultFallbackUsername authors edits no admission fact explains.
const DefaultFallbackUsername = "gitsave:unknown"

// DefaultDiscoveryRefresh is how often discovery is re-read, so new CRDs and
// changed preferred versions are picked up.
const DefaultDiscoveryRefresh = 30 * time.Second

// Config configures a Controller. Every field but Fallback, Clock,
// DiscoveryRefresh and Logger is required.
type Config struct {
	// Dynamic lists and watches the mirrored resources.
	Dynamic dynamic.Interface
	// Discovery resolves WatchRule resources (through an in-memory cache and a
	// deferred RESTMapper built here).
	Discovery discovery.DiscoveryInterface
	// WatchRules and Targets are the config informers; the caller starts them.
	WatchRules configinformers.WatchRuleInformer
	Targets    configinformers.GitTargetInformer
	// Client writes WatchRule status.
	Client versioned.Interface
	// Index attributes watch events to the admission facts.
	Index *attribution.Index
	// Sink receives edits and resyncs (the worker Manager).
	Sink Sink
	// Fallback authors events without a fact (default DefaultFallbackUsername).
	Fallback save.Author
	// Clock stamps events; it must be the Index's clock, because matching
	// compares the event's observation time with the facts' admission times.
	Clock clock.WithTicker
	// DiscoveryRefresh (default DefaultDiscoveryRefresh).
	DiscoveryRefresh time.Duration
	Logger           *logr.Logger
}

// Controller mirrors the objects WatchRules select into their GitTargets: one
// watch per (resource, namespace) shared by every rule that needs it, events
// sanitized, attributed and submitted per target, resyncs on first sync,
// relist and route change, and WatchRule status.
type Controller struct {
	cfg    Config
	log    logr.Logger
	disco  discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper

	kick         chan struct{} // reconcile soon; coalescing
	watchChanged chan struct{} // see WatchChanged

	// resolved is each rule's last resolution, by "namespace/name"; only the
	// Run goroutine touches it.
	resolved map[string]resolvedRule
	// written is the last status written per rule incarnation (Run goroutine only).
	written map[writtenKey]writtenStatus

	mu            sync.Mutex
	routes        *routes
	watchers      map[informerKey]*watcher
	pendingResync map[string]bool   // target keys
	served        map[string]string // target key → who served it at the last reconcile
	announced     string            // WatchedResources+Namespaces last signalled
}

type resolvedRule struct {
	generation int64
	gvrs       []schema.GroupVersionResource
}

// NewController registers on the config informers; call Run to start.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Dynamic == nil || cfg.Discovery == nil || cfg.WatchRules == nil || cfg.Targets == nil ||
		cfg.Client == nil || cfg.Index == nil || cfg.Sink == nil {
		return nil, errors.New("ingest: Dynamic, Discovery, WatchRules, Targets, Client, Index and Sink are required")
	}
	if cfg.Fallback.Username == "" {
		cfg.Fallback = save.Author{Username: DefaultFallbackUsername}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.DiscoveryRefresh <= 0 {
		cfg.DiscoveryRefresh = DefaultDiscoveryRefresh
	}
	log := klog.Background().WithName("ingest")
	if cfg.Logger != nil {
		log = *cfg.Logger
	}
	disco := memory.NewMemCacheClient(cfg.Discovery)
	c := &Controller{
		cfg:           cfg,
		log:           log,
		disco:         disco,
		mapper:        restmapper.NewDeferredDiscoveryRESTMapper(disco),
		kick:          make(chan struct{}, 1),
		watchChanged:  make(chan struct{}, 1),
		resolved:      map[string]resolvedRule{},
		written:       map[writtenKey]writtenStatus{},
		routes:        newRoutes(),
		watchers:      map[informerKey]*watcher{},
		pendingResync: map[string]bool{},
		served:        map[string]string{},
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.kickReconcile() },
		UpdateFunc: func(any, any) { c.kickReconcile() },
		DeleteFunc: func(any) { c.kickReconcile() },
	}
	if _, err := cfg.WatchRules.Informer().AddEventHandler(h); err != nil {
		return nil, err
	}
	if _, err := cfg.Targets.Informer().AddEventHandler(h); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles on every WatchRule/GitTarget change and every
// DiscoveryRefresh until ctx ends, then stops every watch.
func (c *Controller) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.cfg.WatchRules.Informer().HasSynced, c.cfg.Targets.Informer().HasSynced) {
		return
	}
	defer c.stopAll()
	tick := c.cfg.Clock.NewTicker(c.cfg.DiscoveryRefresh)
	defer tick.Stop()
	c.reconcile(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			c.reconcile(ctx)
		case <-tick.C():
			c.mapper.Reset()
			c.reconcile(ctx)
		}
	}
}

func (c *Controller) kickReconcile() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Controller) stopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, w := range c.watchers {
		w.stop()
		delete(c.watchers, k)
	}
}

// ruleResult is one rule's outcome of a reconcile.
type ruleResult struct {
	rule     *configv1alpha1.WatchRule
	problems []problem
	watching []schema.GroupVersionResource
}

// reconcile resolves every WatchRule, swaps the routing table, starts and
// stops watches, queues resyncs for targets whose routes changed, and writes
// WatchRule status.
func (c *Controller) reconcile(ctx context.Context) {
	rules, err := c.cfg.WatchRules.Lister().List(labels.Everything())
	if err != nil {
		c.log.Error(err, "listing WatchRules")
		return
	}
	slices.SortFunc(rules, func(a, b *configv1alpha1.WatchRule) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})

	res := c.resolveAll(rules)
	// A new or edited rule naming an unknown resource may name a CRD created
	// a moment ago: look again before reporting it.
	for _, r := range rules {
		prev, seen := c.resolved[ruleKey(r)]
		if res[ruleKey(r)].noMatch && (!seen || prev.generation != r.Generation) {
			c.mapper.Reset()
			res = c.resolveAll(rules)
			break
		}
	}

	next := newRoutes()
	results := make([]ruleResult, 0, len(rules))
	live, liveRules := map[string]bool{}, map[writtenKey]bool{}
	for _, r := range rules {
		key := ruleKey(r)
		live[key], liveRules[writtenKeyOf(r)] = true, true
		rr := res[key]
		c.resolved[key] = resolvedRule{generation: r.Generation, gvrs: rr.GVRs}
		result := ruleResult{rule: r, problems: rr.Problems}
		target, err := c.cfg.Targets.Lister().GitTargets(r.Namespace).Get(r.Spec.TargetRef.Name)
		switch {
		case apierrors.IsNotFound(err):
			result.problems = append(result.problems, problem{ReasonTargetNotFound,
				fmt.Sprintf("GitTarget %q not found in namespace %s", r.Spec.TargetRef.Name, r.Namespace)})
		case err != nil:
			c.log.Error(err, "reading GitTarget", "watchRule", key)
			continue
		default:
			for _, gvr := range rr.GVRs {
				next.add(r.Namespace, targetKey(r.Namespace, target.Name), target.Spec.Path, gvr)
			}
			result.watching = rr.GVRs
		}
		results = append(results, result)
	}
	for key := range c.resolved {
		if !live[key] {
			delete(c.resolved, key)
		}
	}
	for k := range c.written {
		if !liveRules[k] {
			delete(c.written, k)
		}
	}

	c.mu.Lock()
	c.applyRoutesLocked(ctx, next)
	statuses := make([]ruleStatus, len(results))
	for i, r := range results {
		for _, gvr := range r.watching {
			if w := c.watchers[informerKey{GVR: gvr, Namespace: r.rule.Namespace}]; w != nil && w.err != nil {
				r.problems = append(r.problems, problem{ReasonWatchFailed,
					fmt.Sprintf("cannot list/watch %s: %v", displayGR(gvr.GroupResource()), w.err)})
			}
		}
		statuses[i] = ruleStatusFor(r.rule, r.problems, r.watching)
	}
	c.announceLocked()
	c.mu.Unlock()

	for i, r := range results {
		c.writeStatus(ctx, r.rule, statuses[i])
	}
}

func (c *Controller) resolveAll(rules []*configv1alpha1.WatchRule) map[string]resolution {
	health := checkDiscovery(c.disco)
	out := make(map[string]resolution, len(rules))
	for _, r := range rules {
		out[ruleKey(r)] = resolveRule(c.mapper, health, r, c.resolved[ruleKey(r)].gvrs)
	}
	return out
}

// applyRoutesLocked makes the running watches match next and queues a resync
// for every target whose routes (folder or watched resources) changed. A
// target whose routes did not change is not resynced: resyncs finalize the
// open window, so status-only updates of WatchRules and GitTargets must not
// cause them.
func (c *Controller) applyRoutesLocked(ctx context.Context, next *routes) {
	prev := c.routes
	c.routes = next
	for k := range next.byInformer {
		if c.watchers[k] == nil {
			c.watchers[k] = c.startWatcher(ctx, k)
		}
	}
	for k, w := range c.watchers {
		if _, ok := next.byInformer[k]; !ok {
			w.stop()
			delete(c.watchers, k)
		}
	}
	for t, tr := range next.targets {
		if old, ok := prev.targets[t]; !ok || !old.equal(tr) {
			c.pendingResync[t] = true
		}
	}
	c.trackServingLocked()
	c.flushResyncsLocked()
}

// announceLocked signals WatchChanged after the first reconcile and whenever
// the watched resources or namespaces change.
func (c *Controller) announceLocked() {
	var sig strings.Builder
	sig.WriteString("|")
	for _, k := range slices.SortedFunc(maps.Keys(c.routes.byInformer), compareInformerKeys) {
		sig.WriteString(k.Namespace + " " + k.GVR.String() + "|")
	}
	if sig.String() == c.announced {
		return
	}
	c.announced = sig.String()
	select {
	case c.watchChanged <- struct{}{}:
	default:
	}
}

func ruleKey(r *configv1alpha1.WatchRule) string { return r.Namespace + "/" + r.Name }
