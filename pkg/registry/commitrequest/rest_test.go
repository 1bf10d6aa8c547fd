package commitrequest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/save"
)

func newTestREST(t *testing.T, opts Options) (*REST, *clocktesting.FakeClock) {
	t.Helper()
	c := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	opts.Clock = c
	return NewREST(serverScheme, opts), c
}

func janeCtx() context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), "demo")
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "jane", UID: "u-1", Groups: []string{"editors"}})
}

func create(t *testing.T, r *REST, name string) *gitsave.CommitRequest {
	t.Helper()
	obj, err := r.Create(janeCtx(), &gitsave.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gitsave.CommitRequestSpec{TargetRef: gitsave.TargetReference{Name: "dev"}, Message: "m"},
	}, nil, &metav1.CreateOptions{})
	require.NoError(t, err)
	return obj.(*gitsave.CommitRequest)
}

func get(t *testing.T, r *REST, name string) *gitsave.CommitRequest {
	t.Helper()
	obj, err := r.Get(janeCtx(), name, &metav1.GetOptions{})
	require.NoError(t, err)
	return obj.(*gitsave.CommitRequest)
}

func TestCreateWithoutUserIsForbidden(t *testing.T) {
	r, _ := newTestREST(t, Options{})
	ctx := genericapirequest.WithNamespace(context.Background(), "demo")
	_, err := r.Create(ctx, &gitsave.CommitRequest{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: gitsave.CommitRequestSpec{TargetRef: gitsave.TargetReference{Name: "dev"}}}, nil, &metav1.CreateOptions{})
	require.Error(t, err)
}

func TestWithoutWorkerRequestHonestlyStaysPending(t *testing.T) {
	r, _ := newTestREST(t, Options{})
	cr := create(t, r, "a")
	ready := meta.FindStatusCondition(cr.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.True(t, meta.IsStatusConditionTrue(cr.Status.Conditions, v1alpha1.ConditionReconciling))
	assert.Contains(t, ready.Message, "no branch worker")
}

// Each progress reason maps onto the kstatus conditions.
func TestReportMapsReasonsToConditions(t *testing.T) {
	cases := []struct {
		reason               string
		ready                metav1.ConditionStatus
		reconciling, stalled bool
		pushed               bool
	}{
		{v1alpha1.ReasonWaitingForEdits, metav1.ConditionFalse, true, false, false},
		{v1alpha1.ReasonWaitingForWindow, metav1.ConditionFalse, true, false, false},
		{v1alpha1.ReasonWaitingForCloseDelay, metav1.ConditionFalse, true, false, false},
		{v1alpha1.ReasonAwaitingPush, metav1.ConditionFalse, true, false, false},
		{v1alpha1.ReasonCommitted, metav1.ConditionTrue, false, false, true},
		{v1alpha1.ReasonNoWindowInGrace, metav1.ConditionTrue, false, false, false},
		{v1alpha1.ReasonWindowMismatch, metav1.ConditionTrue, false, false, false},
		{v1alpha1.ReasonAlreadyPresent, metav1.ConditionTrue, false, false, false},
		{v1alpha1.ReasonCommitFailed, metav1.ConditionFalse, false, true, false},
		{v1alpha1.ReasonPushFailed, metav1.ConditionFalse, false, true, false},
		{v1alpha1.ReasonTargetDeleted, metav1.ConditionFalse, false, true, false},
		{v1alpha1.ReasonWorkerStopped, metav1.ConditionFalse, false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			r, _ := newTestREST(t, Options{})
			cr := create(t, r, "a")
			r.Report(cr.UID, save.Progress{Reason: tc.reason, SHA: "abc", Branch: "main"})
			got := get(t, r, "a")
			conds := got.Status.Conditions
			ready := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, tc.ready, ready.Status)
			assert.Equal(t, tc.reason, ready.Reason)
			assert.Equal(t, tc.reconciling, meta.IsStatusConditionTrue(conds, v1alpha1.ConditionReconciling))
			assert.Equal(t, tc.stalled, meta.IsStatusConditionTrue(conds, v1alpha1.ConditionStalled))
			assert.Equal(t, tc.pushed, meta.IsStatusConditionTrue(conds, v1alpha1.ConditionPushed))
			assert.True(t, meta.IsStatusConditionTrue(conds, v1alpha1.ConditionAttributed))
			for _, c := range conds {
				assert.Equal(t, got.Generation, c.ObservedGeneration, c.Type)
			}
		})
	}
}

func TestOutcomeIsFinal(t *testing.T) {
	r, _ := newTestREST(t, Options{})
	cr := create(t, r, "a")
	r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonCommitted, SHA: "abc", Branch: "main"})
	rv := get(t, r, "a").ResourceVersion
	r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonAwaitingPush})
	after := get(t, r, "a")
	assert.Equal(t, rv, after.ResourceVersion, "a late report after the outcome changes nothing")
	assert.True(t, meta.IsStatusConditionTrue(after.Status.Conditions, v1alpha1.ConditionReady))
}

func TestRepeatedReportDoesNotBumpResourceVersion(t *testing.T) {
	r, _ := newTestREST(t, Options{})
	cr := create(t, r, "a")
	r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonAwaitingPush, Message: "connection refused"})
	rv := get(t, r, "a").ResourceVersion
	r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonAwaitingPush, Message: "connection refused"})
	assert.Equal(t, rv, get(t, r, "a").ResourceVersion)
	r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonAwaitingPush, Message: "503"})
	assert.NotEqual(t, rv, get(t, r, "a").ResourceVersion, "a new push error is news")
}

func TestResolvedRequestsAreCollectedAfterRetention(t *testing.T) {
	r, c := newTestREST(t, Options{Retention: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := create(t, r, "done")
	create(t, r, "pending")
	r.Report(done.UID, save.Progress{Reason: v1alpha1.ReasonCommitted, SHA: "abc"})

	w, err := r.Watch(janeCtx(), &metainternalversion.ListOptions{ResourceVersion: get(t, r, "done").ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()

	go r.RunGarbageCollection(ctx, time.Minute)
	require.Eventually(t, c.HasWaiters, 10*time.Second, time.Millisecond)
	c.Step(30 * time.Minute) // not yet
	c.Step(31 * time.Minute)
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, watch.Deleted, ev.Type)
		assert.Equal(t, "done", eventCR(t, ev).Name)
	case <-time.After(10 * time.Second):
		t.Fatal("the resolved request was not collected")
	}
	_, err = r.Get(janeCtx(), "pending", &metav1.GetOptions{})
	assert.NoError(t, err, "a pending request is never collected")
}

func TestIdleWatchGetsBookmarks(t *testing.T) {
	r, c := newTestREST(t, Options{BookmarkInterval: 10 * time.Second})
	create(t, r, "a")
	w, err := r.Watch(janeCtx(), &metainternalversion.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
	require.NoError(t, err)
	defer w.Stop()
	require.Eventually(t, c.HasWaiters, 10*time.Second, time.Millisecond)
	c.Step(10 * time.Second)
	select {
	case ev := <-w.ResultChan():
		require.Equal(t, watch.Bookmark, ev.Type)
		assert.Equal(t, "1", ev.Object.(*gitsave.CommitRequest).ResourceVersion)
	case <-time.After(10 * time.Second):
		t.Fatal("no bookmark")
	}
}

func TestSlowWatcherIsClosedNotBlocking(t *testing.T) {
	r, _ := newTestREST(t, Options{HistorySize: 10})
	cr := create(t, r, "a")
	w, err := r.Watch(janeCtx(), &metainternalversion.ListOptions{ResourceVersion: cr.ResourceVersion})
	require.NoError(t, err)
	// Nobody reads: the store must never block on this watcher.
	for i := 0; i < watcherBuffer+10; i++ {
		r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonAwaitingPush, Message: time.Duration(i).String()})
	}
	n := 0
	for range w.ResultChan() {
		n++
	}
	assert.LessOrEqual(t, n, watcherBuffer+1, "the watcher got what it buffered, then closed")
}
