package attribution

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/gitsave/gitsave/pkg/save"
)

var (
	t0   = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	jane = save.Author{Username: "jane", UID: "u-jane", Groups: []string{"editors", "system:authenticated"}}
	bob  = save.Author{Username: "bob", UID: "u-bob", Groups: []string{"editors"}}
	ctrl = save.Author{Username: "system:serviceaccount:kube-system:horizontal-pod-autoscaler"}

	web = save.EditKey{Group: "apps", Resource: "deployments", Namespace: "demo", Name: "web"}
	cm  = save.EditKey{Resource: "configmaps", Namespace: "demo", Name: "settings"}
)

func newIndex(opts Options) (*Index, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(t0)
	return NewIndex(clk, opts), clk
}

func fact(u save.Author, op string, key save.EditKey) Fact {
	return Fact{User: u, Operation: op, Key: key}
}

func withName(k save.EditKey, name string) save.EditKey {
	k.Name = name
	return k
}

func TestMatchEachOperation(t *testing.T) {
	x, clk := newIndex(Options{})
	for _, op := range []string{OpCreate, OpUpdate, OpDelete} {
		x.Record(fact(jane, op, web))
		clk.Step(10 * time.Millisecond)
		got, ok := x.Match(web, op, clk.Now())
		require.True(t, ok, op)
		assert.Equal(t, jane, got, op)
		_, ok = x.Match(web, op, clk.Now())
		assert.False(t, ok, "%s: a fact is consumed once", op)
	}
	assert.Zero(t, x.Len())
}

func TestMatchNeedsSameOperationAndKey(t *testing.T) {
	x, clk := newIndex(Options{})
	x.Record(fact(jane, OpUpdate, web))
	_, ok := x.Match(web, OpCreate, clk.Now())
	assert.False(t, ok)
	_, ok = x.Match(web, OpDelete, clk.Now())
	assert.False(t, ok)
	_, ok = x.Match(withName(web, "api"), OpUpdate, clk.Now())
	assert.False(t, ok)
	other := web
	other.Namespace = "prod"
	_, ok = x.Match(other, OpUpdate, clk.Now())
	assert.False(t, ok)
	_, ok = x.Match(web, OpUpdate, clk.Now())
	assert.True(t, ok)
}

func TestGenerateNameCreate(t *testing.T) {
	x, clk := newIndex(Options{})
	gen := withName(web, "")
	x.Record(Fact{User: jane, Operation: OpCreate, Key: gen, GenerateName: "web-"})
	clk.Step(time.Millisecond)
	x.Record(Fact{User: bob, Operation: OpCreate, Key: gen, GenerateName: "web-"})

	_, ok := x.Match(withName(web, "api-x7k2q"), OpCreate, clk.Now())
	assert.False(t, ok, "prefix must match")
	other := withName(web, "web-aaaaa")
	other.Namespace = "prod"
	_, ok = x.Match(other, OpCreate, clk.Now())
	assert.False(t, ok, "namespace must match")
	_, ok = x.Match(withName(web, "web-aaaaa"), OpUpdate, clk.Now())
	assert.False(t, ok, "generateName facts explain creates only")

	got, ok := x.Match(withName(web, "web-x7k2q"), OpCreate, clk.Now())
	require.True(t, ok)
	assert.Equal(t, jane, got, "oldest first")
	got, ok = x.Match(withName(web, "web-b9d4f"), OpCreate, clk.Now())
	require.True(t, ok)
	assert.Equal(t, bob, got)
}

func TestExactNameBeatsGenerateName(t *testing.T) {
	x, clk := newIndex(Options{})
	x.Record(Fact{User: bob, Operation: OpCreate, Key: withName(web, ""), GenerateName: "web-"})
	clk.Step(time.Millisecond)
	x.Record(fact(jane, OpCreate, withName(web, "web-x7k2q")))

	got, ok := x.Match(withName(web, "web-x7k2q"), OpCreate, clk.Now())
	require.True(t, ok)
	assert.Equal(t, jane, got)
	got, ok = x.Match(withName(web, "web-zzzzz"), OpCreate, clk.Now())
	require.True(t, ok)
	assert.Equal(t, bob, got)
}

func TestRecordIgnoresNamelessFact(t *testing.T) {
	x, clk := newIndex(Options{})
	x.Record(fact(jane, OpCreate, withName(web, "")))
	assert.Zero(t, x.Len())
	_, ok := x.Match(web, OpCreate, clk.Now())
	assert.False(t, ok)
}

func TestExpiredFactNeverMatches(t *testing.T) {
	x, clk := newIndex(Options{TTL: 30 * time.Second})
	x.Record(fact(jane, OpUpdate, web))
	x.Record(fact(jane, OpUpdate, cm))

	clk.Step(30 * time.Second) // age == TTL: still valid
	_, ok := x.Match(cm, OpUpdate, clk.Now())
	assert.True(t, ok)

	clk.Step(time.Nanosecond)
	_, ok = x.Match(web, OpUpdate, clk.Now())
	assert.False(t, ok)
	assert.Zero(t, x.Len(), "expired fact is dropped on access")
}

func TestSweepBoundsMemory(t *testing.T) {
	x, clk := newIndex(Options{TTL: time.Second})
	for i := range 100 {
		x.Record(fact(jane, OpUpdate, withName(cm, fmt.Sprint("cm-", i))))
	}
	assert.Equal(t, 100, x.Len())
	clk.Step(2 * time.Second)
	x.Sweep()
	assert.Zero(t, x.Len())

	// Without Sweep, Record collects lazily once a TTL has passed.
	for i := range 10 {
		x.Record(fact(jane, OpUpdate, withName(cm, fmt.Sprint("cm-", i))))
	}
	clk.Step(2 * time.Second)
	x.Record(fact(jane, OpUpdate, web))
	assert.Equal(t, 1, x.Len())
}

func TestPerKeyCapDropsOldest(t *testing.T) {
	x, clk := newIndex(Options{MaxFactsPerKey: 4})
	users := []save.Author{{Username: "u0"}, {Username: "u1"}, {Username: "u2"}, {Username: "u3"}, {Username: "u4"}, {Username: "u5"}}
	for _, u := range users {
		x.Record(fact(u, OpUpdate, web))
		clk.Step(time.Millisecond)
	}
	assert.Equal(t, 4, x.Len())
	got, ok := x.Match(web, OpUpdate, clk.Now())
	require.True(t, ok)
	assert.Equal(t, "u2", got.Username, "u0 and u1 were dropped")
}

// A no-op or failed UPDATE leaves a fact that no event will ever take. Much later a
// controller writes the same object: its event must not be attributed to jane.
func TestStaleFactDoesNotStealLaterControllerEvent(t *testing.T) {
	t.Run("controller write without a fact", func(t *testing.T) {
		x, clk := newIndex(Options{})
		x.Record(fact(jane, OpUpdate, web))
		clk.Step(DefaultTTL + 5*time.Second)
		_, ok := x.Match(web, OpUpdate, clk.Now())
		assert.False(t, ok, "fallback author, not jane")
	})
	t.Run("controller write with its own fact", func(t *testing.T) {
		x, clk := newIndex(Options{})
		x.Record(fact(jane, OpUpdate, web))
		clk.Step(DefaultTTL + 5*time.Second)
		x.Record(fact(ctrl, OpUpdate, web))
		clk.Step(10 * time.Millisecond)
		got, ok := x.Match(web, OpUpdate, clk.Now())
		require.True(t, ok)
		assert.Equal(t, ctrl, got)
	})
	t.Run("within the TTL the content fingerprint tells them apart", func(t *testing.T) {
		x, clk := newIndex(Options{})
		failed := fact(jane, OpUpdate, web)
		failed.Content = ContentOf("apps/v1", []byte("replicas: 5"))
		x.Record(failed)
		clk.Step(2 * time.Second)
		scaled := fact(ctrl, OpUpdate, web)
		scaled.Content = ContentOf("apps/v1", []byte("replicas: 7"))
		x.Record(scaled)
		clk.Step(10 * time.Millisecond)

		got, ok := x.MatchEvent(Event{Key: web, Operation: OpUpdate, Observed: clk.Now(),
			Content: ContentOf("apps/v1", []byte("replicas: 7"))})
		require.True(t, ok)
		assert.Equal(t, ctrl, got)
		_, ok = x.MatchEvent(Event{Key: web, Operation: OpUpdate, Observed: clk.Now(),
			Content: ContentOf("apps/v1", []byte("replicas: 8"))})
		assert.False(t, ok, "jane's failed write explains no other content")
	})
}

// A fact admitted after the event was observed cannot explain it, even when the event
// is processed later: it belongs to the next write.
func TestFactAdmittedAfterObservationIsNotACandidate(t *testing.T) {
	x, clk := newIndex(Options{})
	observed := clk.Now() // a controller's write arrives on the watch
	clk.Step(time.Second)
	x.Record(fact(jane, OpUpdate, web)) // jane's write is admitted afterwards

	_, ok := x.Match(web, OpUpdate, observed)
	assert.False(t, ok, "the earlier event is not jane's")

	clk.Step(time.Second)
	got, ok := x.Match(web, OpUpdate, clk.Now())
	require.True(t, ok, "jane's own event still finds her fact")
	assert.Equal(t, jane, got)
}

func TestTwoUsersInTurn(t *testing.T) {
	x, clk := newIndex(Options{})
	x.Record(fact(jane, OpUpdate, web))
	clk.Step(100 * time.Millisecond)
	x.Record(fact(bob, OpUpdate, web))
	clk.Step(100 * time.Millisecond)

	got, ok := x.Match(web, OpUpdate, clk.Now())
	require.True(t, ok)
	assert.Equal(t, jane, got)
	got, ok = x.Match(web, OpUpdate, clk.Now())
	require.True(t, ok)
	assert.Equal(t, bob, got)
}

func TestContentAcrossAPIVersionsIsNotCompared(t *testing.T) {
	x, clk := newIndex(Options{})
	f := fact(jane, OpUpdate, web)
	f.Content = ContentOf("apps/v1beta2", []byte("a"))
	x.Record(f)
	got, ok := x.MatchEvent(Event{Key: web, Operation: OpUpdate, Observed: clk.Now(),
		Content: ContentOf("apps/v1", []byte("b"))})
	require.True(t, ok)
	assert.Equal(t, jane, got)
}

func TestZeroObservedMeansNow(t *testing.T) {
	x, _ := newIndex(Options{})
	x.Record(fact(jane, OpDelete, web))
	_, ok := x.Match(web, OpDelete, time.Time{})
	assert.True(t, ok)
}

func TestPending(t *testing.T) {
	x, clk := newIndex(Options{TTL: 10 * time.Second})
	x.Record(fact(jane, OpUpdate, web))
	clk.Step(time.Millisecond)
	x.Record(fact(bob, OpUpdate, cm))
	clk.Step(time.Millisecond)
	x.Record(fact(jane, OpCreate, cm))
	clk.Step(time.Millisecond)
	x.Record(fact(jane, OpUpdate, web)) // edited twice
	other := withName(cm, "elsewhere")
	other.Namespace = "prod"
	x.Record(fact(jane, OpDelete, other))

	inDemo := func(k save.EditKey) bool { return k.Namespace == "demo" }
	assert.Equal(t, []save.EditKey{web, cm, web}, x.Pending("jane", inDemo))
	assert.Equal(t, []save.EditKey{web, cm, web, other}, x.Pending("jane", nil))
	assert.Equal(t, []save.EditKey{cm}, x.Pending("bob", inDemo))
	assert.Empty(t, x.Pending("carol", nil))

	_, ok := x.Match(web, OpUpdate, clk.Now())
	require.True(t, ok)
	assert.Equal(t, []save.EditKey{cm, web}, x.Pending("jane", inDemo), "observed edits leave the barrier")

	clk.Step(11 * time.Second)
	assert.Empty(t, x.Pending("jane", nil), "expired facts are not pending")
}

func TestOperationFor(t *testing.T) {
	for et, want := range map[watch.EventType]string{watch.Added: OpCreate, watch.Modified: OpUpdate, watch.Deleted: OpDelete} {
		got, ok := OperationFor(et)
		assert.True(t, ok)
		assert.Equal(t, want, got)
	}
	_, ok := OperationFor(watch.Bookmark)
	assert.False(t, ok)
}

func TestMetrics(t *testing.T) {
	get := func(t *testing.T, name string, m float64, err error) float64 {
		t.Helper()
		require.NoError(t, err, name)
		return m
	}
	recorded := func() float64 {
		v, err := testutil.GetCounterMetricValue(factsRecorded.WithLabelValues(OpUpdate))
		return get(t, "recorded", v, err)
	}
	matched := func() float64 {
		v, err := testutil.GetCounterMetricValue(factsMatched.WithLabelValues(OpUpdate))
		return get(t, "matched", v, err)
	}
	expired := func() float64 {
		v, err := testutil.GetCounterMetricValue(factsExpired.WithLabelValues("ttl"))
		return get(t, "expired", v, err)
	}
	unattributed := func() float64 {
		v, err := testutil.GetCounterMetricValue(eventsUnattributed.WithLabelValues(OpUpdate))
		return get(t, "unattributed", v, err)
	}
	r0, m0, e0, u0 := recorded(), matched(), expired(), unattributed()

	x, clk := newIndex(Options{})
	x.Record(fact(jane, OpUpdate, web))
	x.Record(fact(jane, OpUpdate, cm))
	_, _ = x.Match(web, OpUpdate, clk.Now())
	clk.Step(time.Hour)
	_, _ = x.Match(cm, OpUpdate, clk.Now())

	assert.Equal(t, 2.0, recorded()-r0)
	assert.Equal(t, 1.0, matched()-m0)
	assert.Equal(t, 1.0, expired()-e0)
	assert.Equal(t, 1.0, unattributed()-u0)
}

func TestConcurrentUse(t *testing.T) {
	x, clk := newIndex(Options{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := withName(cm, fmt.Sprint("cm-", g))
			for range 200 {
				x.Record(fact(jane, OpUpdate, key))
				_, _ = x.Match(key, OpUpdate, clk.Now())
				_ = x.Pending("jane", nil)
			}
		}()
	}
	wg.Wait()
	x.Sweep()
	assert.Zero(t, x.Len())
}
