package ingest

import (
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/attribution"
	"github.com/gitsave/gitsave/pkg/save"
)

var coreAndApps = []string{"", "apps"}

// startDemo runs a controller with target "dev" (folder clusters/dev) fed by
// a rule selecting configmaps and deployments in demo, and waits for the
// first resync.
func startDemo(t *testing.T) *env {
	e := newEnv(t)
	e.addTarget(ns, "dev", "clusters/dev")
	e.addRule(watchRule(ns, "mirror", "dev", rr(coreAndApps, "configmaps", "deployments")))
	e.watch(cmGVR, ns)
	e.watch(deployGVR, ns)
	e.waitResyncs(1)
	return e
}

func TestEditsAreAttributedToTheAdmittedAuthor(t *testing.T) {
	e := startDemo(t)
	cm := configMap(ns, "web", map[string]any{"color": "blue"})
	dep := deployment(ns, "api", 2)
	e.fact(jane, attribution.OpCreate, cmGVR, cm)
	e.fact(jane, attribution.OpCreate, deployGVR, dep)
	e.create(cmGVR, cm)
	e.create(deployGVR, dep)

	ev := e.waitEvent("clusters/dev/demo/configmaps/web.yaml")
	assert.Equal(t, "demo/dev", ev.Target)
	assert.Equal(t, jane, ev.Author)
	assert.Equal(t, save.EditKey{Resource: "configmaps", Namespace: ns, Name: "web"}, ev.Key)
	assert.Equal(t, mirrored(t, cm), ev.Content)
	assert.Equal(t, e.clock.Now(), ev.Observed)

	ev = e.waitEvent("clusters/dev/demo/deployments.apps/api.yaml")
	assert.Equal(t, jane, ev.Author)
	assert.Equal(t, save.EditKey{Group: "apps", Resource: "deployments", Namespace: ns, Name: "api"}, ev.Key)
	assert.Equal(t, mirrored(t, dep), ev.Content)
	assert.Zero(t, e.index.Len(), "both facts consumed")
}

func TestEditWithoutFactGetsTheFallbackAuthor(t *testing.T) {
	e := startDemo(t)
	e.create(cmGVR, configMap(ns, "nofact", map[string]any{"a": "1"}))
	ev := e.waitEvent("clusters/dev/demo/configmaps/nofact.yaml")
	assert.Equal(t, save.Author{Username: DefaultFallbackUsername}, ev.Author)
}

func TestStatusOnlyChangeAndControlledObjectsAreNoEvents(t *testing.T) {
	e := startDemo(t)
	dep := deployment(ns, "api", 2)
	e.create(deployGVR, dep)
	e.waitEvent("clusters/dev/demo/deployments.apps/api.yaml")

	// Status and bookkeeping only: the mirrored bytes do not change.
	dep.Object["status"] = map[string]any{"replicas": int64(2), "readyReplicas": int64(1)}
	dep.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "3"})
	e.update(deployGVR, dep)

	// A controlled object is not mirrored, but a person's edit of it still
	// consumes the fact (it must not hold up their next Save).
	owned := controlledBy(configMap(ns, "owned", map[string]any{"a": "1"}), "parent")
	e.create(cmGVR, owned)
	owned.Object["data"] = map[string]any{"a": "2"}
	e.fact(jane, attribution.OpUpdate, cmGVR, owned)
	e.update(cmGVR, owned)

	// Later changes in the same watches, delivered in order after the above.
	e.create(deployGVR, deployment(ns, "sentinel", 1))
	e.create(cmGVR, configMap(ns, "sentinel", nil))
	e.waitEvent("clusters/dev/demo/deployments.apps/sentinel.yaml")
	e.waitEvent("clusters/dev/demo/configmaps/sentinel.yaml")

	var paths []string
	for _, ev := range e.sink.Events() {
		paths = append(paths, ev.Path)
	}
	assert.ElementsMatch(t, []string{
		"clusters/dev/demo/deployments.apps/api.yaml",
		"clusters/dev/demo/deployments.apps/sentinel.yaml",
		"clusters/dev/demo/configmaps/sentinel.yaml",
	}, paths)
	assert.Zero(t, e.index.Len(), "the controlled object's edit consumed its fact")
}

func TestDeleteSubmitsNilContent(t *testing.T) {
	e := startDemo(t)
	cm := configMap(ns, "web", map[string]any{"a": "1"})
	e.create(cmGVR, cm)
	e.waitEvent("clusters/dev/demo/configmaps/web.yaml")

	e.fact(jane, attribution.OpDelete, cmGVR, cm)
	e.delete(cmGVR, ns, "web")
	require.Eventually(t, func() bool {
		ev, _ := e.sink.eventFor("clusters/dev/demo/configmaps/web.yaml")
		return ev.Content == nil
	}, wait, tick)
	ev, _ := e.sink.eventFor("clusters/dev/demo/configmaps/web.yaml")
	assert.Equal(t, jane, ev.Author)
	assert.Equal(t, save.EditKey{Resource: "configmaps", Namespace: ns, Name: "web"}, ev.Key)
}

func TestDeleteWithFinalizersIsAttributedWhenDeletionStarts(t *testing.T) {
	e := startDemo(t)
	cm := configMap(ns, "guarded", map[string]any{"a": "1"})
	cm.SetFinalizers([]string{"example.com/cleanup"})
	e.create(cmGVR, cm)
	e.waitEvent("clusters/dev/demo/configmaps/guarded.yaml")

	// The DELETE is admitted, then shows as the MODIFIED setting
	// deletionTimestamp: the fact is consumed there (no event: same bytes).
	e.fact(jane, attribution.OpDelete, cmGVR, cm)
	now := metav1.NewTime(e.clock.Now())
	cm.SetDeletionTimestamp(&now)
	e.update(cmGVR, cm)
	require.Eventually(t, func() bool { return e.index.Len() == 0 }, wait, tick)
	assert.Len(t, e.sink.Events(), 1)

	// A write by someone else while finalizers run has no fact for a DELETE.
	e.index.Record(attribution.Fact{User: save.Author{Username: "bob"}, Operation: attribution.OpDelete,
		Key: keyOf(cmGVR, cm)})
	e.delete(cmGVR, ns, "guarded") // finalizers done
	require.Eventually(t, func() bool { return len(e.sink.Events()) == 2 }, wait, tick)
	ev := e.sink.Events()[1]
	assert.Nil(t, ev.Content)
	assert.Equal(t, jane, ev.Author, "the author matched when deletion started")
	assert.Equal(t, 1, e.index.Len(), "the DELETED did not take another fact")
}

func TestFirstSyncResyncsTheFullLiveState(t *testing.T) {
	cm := configMap(ns, "a", map[string]any{"k": "v"})
	dep := deployment(ns, "d", 3)
	owned := controlledBy(configMap(ns, "owned", nil), "parent")
	elsewhere := configMap("other", "x", nil)
	e := newEnv(t, cm, dep, owned, elsewhere)
	e.addTarget(ns, "dev", "clusters/dev")
	e.addRule(watchRule(ns, "mirror", "dev", rr(coreAndApps, "configmaps", "deployments")))

	rs := e.waitResyncs(1)
	require.Len(t, rs, 1)
	assert.Equal(t, "demo/dev", rs[0].Target)
	assert.Equal(t, map[string][]byte{
		"clusters/dev/demo/configmaps/a.yaml":       mirrored(t, cm),
		"clusters/dev/demo/deployments.apps/d.yaml": mirrored(t, dep),
	}, rs[0].Desired)
	assert.Empty(t, e.sink.Events(), "a list is not edits")
}

func TestRuleChangeStartsAndStopsWatchesAndResyncs(t *testing.T) {
	cm := configMap(ns, "a", nil)
	dep := deployment(ns, "d", 1)
	e := newEnv(t, cm, dep)
	e.addTarget(ns, "dev", "")
	e.addRule(watchRule(ns, "mirror", "dev", rr([]string{""}, "configmaps")))
	rs := e.waitResyncs(1)
	assert.Equal(t, []string{"demo/configmaps/a.yaml"}, slices.Sorted(maps.Keys(rs[0].Desired)))
	assert.Equal(t, []schema.GroupVersionResource{cmGVR}, e.ctrl.WatchedResources())
	cmWatch := e.watch(cmGVR, ns)

	e.updateRuleSpec(ns, "mirror", rr(coreAndApps, "configmaps", "deployments"))
	e.watch(deployGVR, ns)
	rs = e.waitResyncs(2)
	assert.Equal(t, []string{"demo/configmaps/a.yaml", "demo/deployments.apps/d.yaml"}, slices.Sorted(maps.Keys(rs[1].Desired)))

	e.updateRuleSpec(ns, "mirror", rr([]string{"apps"}, "deployments"))
	rs = e.waitResyncs(3)
	assert.Equal(t, []string{"demo/deployments.apps/d.yaml"}, slices.Sorted(maps.Keys(rs[2].Desired)))
	assert.Equal(t, []schema.GroupVersionResource{deployGVR}, e.ctrl.WatchedResources())
	require.Eventually(t, cmWatch.stopped, wait, tick, "the configmaps watch is stopped")
	assert.Equal(t, 1, e.watchCount(deployGVR, ns), "the deployments watch was kept, not restarted")
	assert.Equal(t, []string{"deployments.apps"}, e.rule(ns, "mirror").Status.Watching)
}

func TestSecondTargetOnASyncedWatchIsResyncedAtOnce(t *testing.T) {
	cm := configMap(ns, "a", nil)
	e := newEnv(t, cm)
	e.addTarget(ns, "dev", "dev")
	e.addRule(watchRule(ns, "one", "dev", rr([]string{""}, "configmaps")))
	e.waitResyncs(1)

	e.addTarget(ns, "prod", "prod")
	e.addRule(watchRule(ns, "two", "prod", rr([]string{""}, "configmaps")))
	rs := e.waitResyncs(2)
	assert.Equal(t, "demo/prod", rs[1].Target)
	assert.Equal(t, map[string][]byte{"prod/demo/configmaps/a.yaml": mirrored(t, cm)}, rs[1].Desired)
	assert.Equal(t, 1, e.watchCount(cmGVR, ns), "one shared watch")

	e.create(cmGVR, configMap(ns, "b", nil))
	e.waitEvent("dev/demo/configmaps/b.yaml")
	e.waitEvent("prod/demo/configmaps/b.yaml")
}

func TestRelistResyncsInsteadOfReplayingEvents(t *testing.T) {
	cm := configMap(ns, "a", map[string]any{"v": "1"})
	e := newEnv(t, cm)
	e.addTarget(ns, "dev", "")
	e.addRule(watchRule(ns, "mirror", "dev", rr([]string{""}, "configmaps")))
	e.waitResyncs(1)
	w := e.watch(cmGVR, ns)

	// The watch misses a change, then expires: the reflector relists.
	w.mute()
	changed := configMap(ns, "a", map[string]any{"v": "2"})
	e.update(cmGVR, changed)
	w.expire()

	rs := e.waitResyncs(2)
	assert.Equal(t, map[string][]byte{"demo/configmaps/a.yaml": mirrored(t, changed)}, rs[1].Desired)
	assert.Empty(t, e.sink.Events(), "the relist's difference is committed by the resync, not as an edit")

	// And the new watch delivers edits again.
	e.create(cmGVR, configMap(ns, "b", nil))
	e.waitEvent("demo/configmaps/b.yaml")
}

func TestRuleProblemsAreReportedAndTheRestIsWatched(t *testing.T) {
	e := newEnv(t)
	e.addTarget(ns, "dev", "")
	e.addRule(watchRule(ns, "mixed", "dev",
		rr([]string{""}, "configmaps", "secrets", "namespaces"),
		rr([]string{"example.com"}, "widgets")))
	e.watch(cmGVR, ns)

	var r = e.waitRuleCondition(ns, "mixed", ReasonResourceUnknown)
	cond := meta.FindStatusCondition(r.Status.Conditions, ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Contains(t, cond.Message, "widgets")
	assert.Contains(t, cond.Message, "secrets skipped")
	assert.Contains(t, cond.Message, "namespaces")
	assert.Equal(t, int64(1), cond.ObservedGeneration)
	assert.Equal(t, int64(1), r.Status.ObservedGeneration)
	assert.Equal(t, []string{"configmaps"}, r.Status.Watching)
	assert.Equal(t, []schema.GroupVersionResource{cmGVR}, e.ctrl.WatchedResources(), "Secrets are never watched")

	// A rule naming only what is skipped says so with its own reason.
	e.addRule(watchRule(ns, "secrets", "dev", rr([]string{""}, "secrets")))
	r = e.waitRuleCondition(ns, "secrets", ReasonSecretsSkipped)
	assert.Empty(t, r.Status.Watching)

	// The CRD appears: after discovery is refreshed the rule becomes Ready.
	e.disco.addResources(&metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget"},
	}})
	e.updateRuleSpec(ns, "mixed", rr([]string{""}, "configmaps"), rr([]string{"example.com"}, "widgets"))
	r = e.waitRuleCondition(ns, "mixed", ReasonReady)
	assert.Equal(t, []string{"configmaps", "widgets.example.com"}, r.Status.Watching)
	assert.Equal(t, int64(2), r.Status.ObservedGeneration)
	e.watch(widgetGVR, ns)
}

func TestMissingTargetIsReportedAndNothingWatched(t *testing.T) {
	e := newEnv(t)
	e.addRule(watchRule(ns, "orphan", "nope", rr([]string{""}, "configmaps")))
	r := e.waitRuleCondition(ns, "orphan", ReasonTargetNotFound)
	assert.Contains(t, meta.FindStatusCondition(r.Status.Conditions, ConditionReady).Message, `"nope"`)
	assert.Empty(t, r.Status.Watching)
	assert.Empty(t, e.ctrl.WatchedResources())

	e.addTarget(ns, "nope", "")
	e.waitRuleCondition(ns, "orphan", ReasonReady)
	e.watch(cmGVR, ns)
	e.waitResyncs(1)
}

func TestStatusIsWrittenOnlyWhenItChanges(t *testing.T) {
	e := newEnv(t)
	e.addTarget(ns, "dev", "")
	e.addRule(watchRule(ns, "mirror", "dev", rr([]string{""}, "configmaps")))
	e.waitRuleCondition(ns, "mirror", ReasonReady)
	writes := e.statusWrites()

	// A discovery refresh and an unrelated GitTarget change reconcile again.
	e.clock.Step(DefaultDiscoveryRefresh)
	e.addTarget(ns, "unrelated", "")
	e.addRule(watchRule(ns, "second", "dev", rr([]string{""}, "configmaps")))
	e.waitRuleCondition(ns, "second", ReasonReady)
	assert.Equal(t, writes+1, e.statusWrites(), "only the new rule's status was written")
}

func TestRoutedToAndBarrierKeys(t *testing.T) {
	e := newEnv(t)
	e.addTarget(ns, "dev", "")
	e.addTarget("other", "dev", "")
	e.addRule(watchRule(ns, "mirror", "dev", rr(coreAndApps, "configmaps", "deployments")))
	e.addRule(watchRule("other", "mirror", "dev", rr([]string{""}, "configmaps")))
	e.watch(cmGVR, ns)
	e.watch(deployGVR, ns)
	e.watch(cmGVR, "other")

	routed := e.ctrl.RoutedTo(ns, "dev")
	assert.True(t, routed(save.EditKey{Resource: "configmaps", Namespace: ns, Name: "x"}))
	assert.True(t, routed(save.EditKey{Group: "apps", Resource: "deployments", Namespace: ns, Name: "x"}))
	assert.False(t, routed(save.EditKey{Resource: "secrets", Namespace: ns, Name: "x"}))
	assert.False(t, routed(save.EditKey{Resource: "configmaps", Namespace: "other", Name: "x"}))
	assert.False(t, e.ctrl.RoutedTo(ns, "missing")(save.EditKey{Resource: "configmaps", Namespace: ns, Name: "x"}))

	cm := configMap(ns, "web", nil)
	e.fact(jane, attribution.OpUpdate, cmGVR, cm)
	e.fact(jane, attribution.OpCreate, secretGVR, configMap(ns, "token", nil))
	e.fact(jane, attribution.OpUpdate, cmGVR, configMap("other", "web", nil))
	e.fact(save.Author{Username: "bob"}, attribution.OpUpdate, cmGVR, configMap(ns, "bobs", nil))
	dep := deployment(ns, "api", 1)
	e.fact(jane, attribution.OpUpdate, deployGVR, dep)

	assert.Equal(t, []save.EditKey{keyOf(cmGVR, cm), keyOf(deployGVR, dep)}, e.ctrl.BarrierKeys("jane", ns, "dev"))
	assert.Equal(t, []save.EditKey{{Resource: "configmaps", Namespace: "other", Name: "web"}}, e.ctrl.BarrierKeys("jane", "other", "dev"))
	assert.Equal(t, []string{"demo", "other"}, e.ctrl.WatchedNamespaces())
}

func (e *env) waitRuleCondition(namespace, name, reason string) *configv1alpha1.WatchRule {
	e.t.Helper()
	var r *configv1alpha1.WatchRule
	require.Eventually(e.t, func() bool {
		r = e.rule(namespace, name)
		c := meta.FindStatusCondition(r.Status.Conditions, ConditionReady)
		return c != nil && c.Reason == reason && c.ObservedGeneration == r.Generation
	}, wait, tick, "WatchRule %s/%s never had reason %s", namespace, name, reason)
	return r
}

func (e *env) statusWrites() int {
	n := 0
	for _, a := range e.config.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestFailingListIsReportedUntilItSucceeds(t *testing.T) {
	e := newEnv(t)
	var forbidden atomic.Bool
	forbidden.Store(true)
	e.dyn.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if forbidden.Load() {
			return true, nil, apierrors.NewForbidden(cmGVR.GroupResource(), "", errors.New("RBAC says no"))
		}
		return false, nil, nil
	})
	e.addTarget(ns, "dev", "")
	e.addRule(watchRule(ns, "mirror", "dev", rr([]string{""}, "configmaps")))

	r := e.waitRuleCondition(ns, "mirror", ReasonWatchFailed)
	assert.Contains(t, meta.FindStatusCondition(r.Status.Conditions, ConditionReady).Message, "RBAC says no")
	assert.Empty(t, e.sink.Resyncs(), "no resync before the list succeeds")

	forbidden.Store(false) // the reflector retries with backoff
	e.waitRuleCondition(ns, "mirror", ReasonReady)
	e.waitResyncs(1)
}

func TestResyncWaitsUntilTheTargetIsServed(t *testing.T) {
	a := configMap(ns, "a", nil)
	sink := &recorder{}
	sink.serve("demo/dev", "") // e.g. its GitProvider does not exist yet
	e := newEnvWith(t, sink, a)
	e.addTarget(ns, "dev", "")
	e.addRule(watchRule(ns, "mirror", "dev", rr([]string{""}, "configmaps")))
	e.watch(cmGVR, ns)
	b := configMap(ns, "b", nil)
	e.create(cmGVR, b)
	e.waitEvent("demo/configmaps/b.yaml") // delivered after the list
	assert.Empty(t, sink.Resyncs(), "the worker would drop it")

	// The worker starts; the status writer's update of the GitTarget follows.
	sink.serve("demo/dev", "repo")
	e.touchTarget(ns, "dev", "1111")
	rs := e.waitResyncs(1)
	assert.Equal(t, map[string][]byte{
		"demo/configmaps/a.yaml": mirrored(t, a),
		"demo/configmaps/b.yaml": mirrored(t, b),
	}, rs[0].Desired)

	// Unchanged serving: status updates cause no resync.
	e.touchTarget(ns, "dev", "2222")
	// Moved to another repository: the new worker gets the live state.
	sink.serve("demo/dev", "other-repo")
	e.touchTarget(ns, "dev", "3333")
	e.waitResyncs(2)
	e.create(cmGVR, configMap(ns, "c", nil))
	e.waitEvent("demo/configmaps/c.yaml")
	assert.Len(t, sink.Resyncs(), 2, "one resync per change of serving, none for status updates")
}
