package ingest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/attribution"
	configfake "github.com/gitsave/gitsave/pkg/generated/clientset/versioned/fake"
	"github.com/gitsave/gitsave/pkg/generated/informers/externalversions"
	"github.com/gitsave/gitsave/pkg/ingest/sanitize"
	"github.com/gitsave/gitsave/pkg/save"
	"github.com/gitsave/gitsave/pkg/worker"
)

const ns = "demo"

var (
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	deployGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

	jane = save.Author{Username: "jane", UID: "u-jane", Groups: []string{"editors"}}

	// wait bounds waiting for informer delivery only; nothing is timed.
	wait = 10 * time.Second
	tick = 10 * time.Millisecond
)

// baseResources is what discovery serves unless a test changes it.
func baseResources() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap"},
			{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret"},
			{Name: "namespaces", SingularName: "namespace", Namespaced: false, Kind: "Namespace"},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment"},
			{Name: "deployments/scale", Namespaced: true, Kind: "Scale"},
		}},
	}
}

// testDiscovery is a fake discovery whose resources a test may change while
// the controller reads them.
type testDiscovery struct {
	*fakediscovery.FakeDiscovery
	mu sync.Mutex
}

func newTestDiscovery() *testDiscovery {
	return &testDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{
		Fake: &clienttesting.Fake{Resources: baseResources()},
	}}
}

func (d *testDiscovery) addResources(l *metav1.APIResourceList) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Resources = append(d.Resources, l)
}

func (d *testDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	return d.ServerGroupsWithContext(context.Background())
}

func (d *testDiscovery) ServerGroupsWithContext(ctx context.Context) (*metav1.APIGroupList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerGroupsWithContext(ctx)
}

func (d *testDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.ServerResourcesForGroupVersionWithContext(context.Background(), gv)
}

func (d *testDiscovery) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
}

// recorder is the Sink. Like worker.Manager it says which targets it serves:
// all, on branch main of "repo", unless a test says otherwise.
type recorder struct {
	mu      sync.Mutex
	events  []worker.Event
	resyncs []worker.ResyncBatch
	serving map[string]string // target → URL; "" is not served
}

func (r *recorder) TargetState(target string) worker.TargetState {
	r.mu.Lock()
	defer r.mu.Unlock()
	url, set := r.serving[target]
	if !set {
		url = "repo"
	}
	if url == "" {
		return worker.TargetState{}
	}
	return worker.TargetState{Served: true, Known: true, Snapshot: worker.Snapshot{URL: url, Branch: "main"}}
}

func (r *recorder) serve(target, url string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.serving == nil {
		r.serving = map[string]string{}
	}
	r.serving[target] = url
}

func (r *recorder) Submit(ev worker.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) Resync(b worker.ResyncBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resyncs = append(r.resyncs, b)
}

func (r *recorder) Events() []worker.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]worker.Event(nil), r.events...)
}

func (r *recorder) Resyncs() []worker.ResyncBatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]worker.ResyncBatch(nil), r.resyncs...)
}

// eventFor returns the last event for path.
func (r *recorder) eventFor(path string) (worker.Event, bool) {
	evs := r.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Path == path {
			return evs[i], true
		}
	}
	return worker.Event{}, false
}

// testWatch passes a fake tracker watch through, and lets a test drop its
// events (as if the watch missed them) or inject one (a 410).
type testWatch struct {
	inner  watch.Interface
	out    chan watch.Event
	inject chan watch.Event
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	muted  bool
}

func newTestWatch(inner watch.Interface) *testWatch {
	w := &testWatch{inner: inner, out: make(chan watch.Event), inject: make(chan watch.Event), done: make(chan struct{})}
	go w.forward()
	return w
}

func (w *testWatch) forward() {
	defer close(w.out)
	for {
		var ev watch.Event
		select {
		case <-w.done:
			return
		case e, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			w.mu.Lock()
			muted := w.muted
			w.mu.Unlock()
			if muted {
				continue
			}
			ev = e
		case ev = <-w.inject:
		}
		select {
		case w.out <- ev:
		case <-w.done:
			return
		}
	}
}

func (w *testWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.inner.Stop()
	})
}

func (w *testWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *testWatch) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *testWatch) mute() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.muted = true
}

// expire sends what the API server sends when a watch's resourceVersion is
// too old: the reflector relists.
func (w *testWatch) expire() {
	ev := watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version",
	}}
	select {
	case w.inject <- ev:
	case <-w.done:
	}
}

// env is a Controller over fake clients.
type env struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	dyn    *dynamicfake.FakeDynamicClient
	disco  *testDiscovery
	config *configfake.Clientset
	clock  *clocktesting.FakeClock
	index  *attribution.Index
	sink   *recorder
	ctrl   *Controller

	mu      sync.Mutex
	watches map[informerKey][]*testWatch
}

func newEnv(t *testing.T, objs ...runtime.Object) *env {
	t.Helper()
	return newEnvWith(t, &recorder{}, objs...)
}

func newEnvWith(t *testing.T, sink *recorder, objs ...runtime.Object) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{
		t:       t,
		ctx:     ctx,
		cancel:  cancel,
		disco:   newTestDiscovery(),
		clock:   clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		sink:    sink,
		watches: map[informerKey][]*testWatch{},
	}
	e.index = attribution.NewIndex(e.clock, attribution.Options{})
	e.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cmGVR: "ConfigMapList", secretGVR: "SecretList", deployGVR: "DeploymentList", widgetGVR: "WidgetList",
	}, objs...)
	// Watches are opened on the tracker here, so an object created once the
	// test saw the watch cannot fall between list and watch.
	e.dyn.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(clienttesting.WatchActionImpl); ok {
			opts.ResourceVersion = wa.GetWatchRestrictions().ResourceVersion
		}
		inner, err := e.dyn.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		w := newTestWatch(inner)
		e.mu.Lock()
		k := informerKey{GVR: a.GetResource(), Namespace: a.GetNamespace()}
		e.watches[k] = append(e.watches[k], w)
		e.mu.Unlock()
		return true, w, nil
	})
	e.config = configfake.NewSimpleClientset()
	f := externalversions.NewSharedInformerFactory(e.config, 0)
	ctrl, err := NewController(Config{
		Dynamic:    e.dyn,
		Discovery:  e.disco,
		WatchRules: f.Config().V1alpha1().WatchRules(),
		Targets:    f.Config().V1alpha1().GitTargets(),
		Client:     e.config,
		Index:      e.index,
		Sink:       e.sink,
		Clock:      e.clock,
	})
	require.NoError(t, err)
	e.ctrl = ctrl
	f.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		f.Shutdown()
	})
	return e
}

// watch returns the live watch of (gvr, namespace) once the informer has
// opened it.
func (e *env) watch(gvr schema.GroupVersionResource, namespace string) *testWatch {
	e.t.Helper()
	var w *testWatch
	require.Eventually(e.t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		ws := e.watches[informerKey{GVR: gvr, Namespace: namespace}]
		if len(ws) == 0 || ws[len(ws)-1].stopped() {
			return false
		}
		w = ws[len(ws)-1]
		return true
	}, wait, tick, "no watch on %s in %s", gvr, namespace)
	return w
}

func (e *env) watchCount(gvr schema.GroupVersionResource, namespace string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.watches[informerKey{GVR: gvr, Namespace: namespace}])
}

// touchTarget updates a GitTarget's status, as the worker's status writer
// does when serving changes.
func (e *env) touchTarget(namespace, name, sha string) {
	e.t.Helper()
	tg, err := e.config.ConfigV1alpha1().GitTargets(namespace).Get(e.ctx, name, metav1.GetOptions{})
	require.NoError(e.t, err)
	tg.Status.LastPushedSHA = sha
	_, err = e.config.ConfigV1alpha1().GitTargets(namespace).UpdateStatus(e.ctx, tg, metav1.UpdateOptions{})
	require.NoError(e.t, err)
}

func (e *env) addTarget(namespace, name, path string) {
	e.t.Helper()
	_, err := e.config.ConfigV1alpha1().GitTargets(namespace).Create(e.ctx, &configv1alpha1.GitTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
		Spec: configv1alpha1.GitTargetSpec{
			ProviderRef: configv1alpha1.LocalObjectReference{Name: "repo"}, Branch: "main", Path: path,
		},
	}, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

func watchRule(namespace, name, target string, rules ...configv1alpha1.ResourceRule) *configv1alpha1.WatchRule {
	return &configv1alpha1.WatchRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
		Spec:       configv1alpha1.WatchRuleSpec{TargetRef: configv1alpha1.LocalObjectReference{Name: target}, Rules: rules},
	}
}

func rr(groups []string, resources ...string) configv1alpha1.ResourceRule {
	return configv1alpha1.ResourceRule{APIGroups: groups, Resources: resources}
}

func (e *env) addRule(r *configv1alpha1.WatchRule) {
	e.t.Helper()
	_, err := e.config.ConfigV1alpha1().WatchRules(r.Namespace).Create(e.ctx, r, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

// updateRuleSpec replaces a rule's spec and bumps its generation, as the API
// server would.
func (e *env) updateRuleSpec(namespace, name string, rules ...configv1alpha1.ResourceRule) {
	e.t.Helper()
	r, err := e.config.ConfigV1alpha1().WatchRules(namespace).Get(e.ctx, name, metav1.GetOptions{})
	require.NoError(e.t, err)
	r.Spec.Rules = rules
	r.Generation++
	_, err = e.config.ConfigV1alpha1().WatchRules(namespace).Update(e.ctx, r, metav1.UpdateOptions{})
	require.NoError(e.t, err)
}

func (e *env) rule(namespace, name string) *configv1alpha1.WatchRule {
	e.t.Helper()
	r, err := e.config.ConfigV1alpha1().WatchRules(namespace).Get(e.ctx, name, metav1.GetOptions{})
	require.NoError(e.t, err)
	return r
}

// waitResyncs waits for n resyncs and returns them.
func (e *env) waitResyncs(n int) []worker.ResyncBatch {
	e.t.Helper()
	require.Eventually(e.t, func() bool { return len(e.sink.Resyncs()) >= n }, wait, tick, "want %d resyncs", n)
	return e.sink.Resyncs()
}

func (e *env) waitEvent(path string) worker.Event {
	e.t.Helper()
	var ev worker.Event
	require.Eventually(e.t, func() bool {
		var ok bool
		ev, ok = e.sink.eventFor(path)
		return ok
	}, wait, tick, "no event for %s", path)
	return ev
}

func (e *env) create(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	e.t.Helper()
	_, err := e.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(e.ctx, u, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

func (e *env) update(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	e.t.Helper()
	_, err := e.dyn.Resource(gvr).Namespace(u.GetNamespace()).Update(e.ctx, u, metav1.UpdateOptions{})
	require.NoError(e.t, err)
}

func (e *env) delete(gvr schema.GroupVersionResource, namespace, name string) {
	e.t.Helper()
	require.NoError(e.t, e.dyn.Resource(gvr).Namespace(namespace).Delete(e.ctx, name, metav1.DeleteOptions{}))
}

// fact records what the webhook records for a write of u by user.
func (e *env) fact(user save.Author, op string, gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	f := attribution.Fact{User: user, Operation: op, Key: keyOf(gvr, u)}
	if op != attribution.OpDelete {
		f.Content = attribution.ContentOf(u.GetAPIVersion(), mirrored(e.t, u))
	}
	e.index.Record(f)
}

func keyOf(gvr schema.GroupVersionResource, u *unstructured.Unstructured) save.EditKey {
	return save.EditKey{Group: gvr.Group, Resource: gvr.Resource, Namespace: u.GetNamespace(), Name: u.GetName()}
}

func mirrored(t *testing.T, u *unstructured.Unstructured) []byte {
	t.Helper()
	b, err := sanitize.Marshal(u)
	require.NoError(t, err)
	return b
}

func configMap(namespace, name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"data":     data,
	}}
}

func deployment(namespace, name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
		},
	}}
}

func controlledBy(u *unstructured.Unstructured, owner string) *unstructured.Unstructured {
	u.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: "example.com/v1", Kind: "Owner", Name: owner, UID: "owner-uid", Controller: ptrTo(true),
	}})
	return u
}

func ptrTo[T any](v T) *T { return &v }
