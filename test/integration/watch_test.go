package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/apiserver"
	"github.com/gitsave/gitsave/pkg/generated/informers/externalversions"
	"github.com/gitsave/gitsave/pkg/save"
)

// next reads one event or fails after a generous bound (a hang is a failure, not a
// timing assertion).
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

func name(ev watch.Event) string {
	return ev.Object.(*v1alpha1.CommitRequest).Name
}

func TestInformerSyncsAndSeesWorkerTransitions(t *testing.T) {
	e := startServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jane := e.jane(t)
	_, err := jane.GitsaveV1alpha1().CommitRequests("demo").Create(ctx, newRequest("before", "m"), metav1.CreateOptions{})
	require.NoError(t, err)

	factory := externalversions.NewSharedInformerFactoryWithOptions(jane, 0, externalversions.WithNamespace("demo"))
	informer := factory.Gitsave().V1alpha1().CommitRequests()
	updates := make(chan *v1alpha1.CommitRequest, 16)
	_, err = informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { updates <- obj.(*v1alpha1.CommitRequest) },
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	synced := factory.WaitForCacheSync(ctx.Done())
	for typ, ok := range synced {
		require.True(t, ok, "informer for %v synced", typ)
	}
	got, err := informer.Lister().CommitRequests("demo").Get("before")
	require.NoError(t, err)
	assert.Equal(t, "jane", got.Status.Author.Username)

	// The worker seam: a status report is a MODIFIED event the informer sees.
	uid := got.UID
	e.CommitRequests.Report(uid, save.Progress{Reason: v1alpha1.ReasonCommitted, SHA: "0123456789abcdef", Branch: "main", FinalizedBy: v1alpha1.FinalizedByCloseDelay, FilesChanged: 2})
	select {
	case cr := <-updates:
		ready := meta.FindStatusCondition(cr.Status.Conditions, v1alpha1.ConditionReady)
		require.NotNil(t, ready)
		assert.Equal(t, metav1.ConditionTrue, ready.Status)
		assert.Equal(t, v1alpha1.ReasonCommitted, ready.Reason)
		assert.True(t, meta.IsStatusConditionTrue(cr.Status.Conditions, v1alpha1.ConditionPushed))
		assert.Nil(t, meta.FindStatusCondition(cr.Status.Conditions, v1alpha1.ConditionReconciling))
		assert.Equal(t, "0123456789abcdef", cr.Status.SHA)
		assert.Equal(t, int32(2), cr.Status.FilesChanged)
	case <-time.After(30 * time.Second):
		t.Fatal("the informer did not see the worker's status update")
	}
}

func TestWatchSendInitialEventsEndsWithBookmark(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()
	crs := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")
	for _, n := range []string{"a", "b"} {
		_, err := crs.Create(ctx, newRequest(n, "m"), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	w, err := crs.Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	require.NoError(t, err)
	defer w.Stop()

	assert.Equal(t, watch.Added, next(t, w).Type)
	assert.Equal(t, watch.Added, next(t, w).Type)
	bm := next(t, w)
	require.Equal(t, watch.Bookmark, bm.Type)
	acc, err := meta.Accessor(bm.Object)
	require.NoError(t, err)
	assert.Equal(t, "true", acc.GetAnnotations()[metav1.InitialEventsAnnotationKey])
	assert.NotEmpty(t, acc.GetResourceVersion())

	_, err = crs.Create(ctx, newRequest("c", "m"), metav1.CreateOptions{})
	require.NoError(t, err)
	ev := next(t, w)
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, "c", name(ev))
}

func TestWatchResumesFromResourceVersion(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()
	crs := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")
	a, err := crs.Create(ctx, newRequest("a", "m"), metav1.CreateOptions{})
	require.NoError(t, err)

	// Changes made while the client was away: a label on a, b created, a deleted.
	_, err = crs.Patch(ctx, "a", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = crs.Create(ctx, newRequest("b", "m"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, crs.Delete(ctx, "a", metav1.DeleteOptions{}))

	w, err := crs.Watch(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	var got []string
	for i := 0; i < 3; i++ {
		ev := next(t, w)
		got = append(got, string(ev.Type)+" "+name(ev))
	}
	assert.Equal(t, []string{"MODIFIED a", "ADDED b", "DELETED a"}, got, "exactly the missed events, in order")
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("unexpected extra event %v", ev.Type)
	default:
	}
}

func TestWatchTooOldResourceVersionIsGone(t *testing.T) {
	e := startServer(t, func(o *apiserver.Options) { o.WatchHistory = 3 })
	ctx := context.Background()
	crs := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")
	first, err := crs.Create(ctx, newRequest("first", "m"), metav1.CreateOptions{})
	require.NoError(t, err)
	for i := 0; i < 8; i++ {
		_, err := crs.Patch(ctx, "first", "application/merge-patch+json",
			[]byte(`{"metadata":{"labels":{"n":"`+string(rune('a'+i))+`"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	_, err = crs.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	require.Error(t, err)
	assert.True(t, apierrors.IsResourceExpired(err) || apierrors.IsGone(err), "want 410 Gone, got %v", err)

	_, err = crs.Watch(ctx, metav1.ListOptions{ResourceVersion: "999999"})
	require.Error(t, err, "a resourceVersion from the future is refused")
}

func TestWatchSelectorTransitions(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()
	crs := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")
	_, err := crs.Create(ctx, newRequest("a", "m"), metav1.CreateOptions{})
	require.NoError(t, err)

	w, err := crs.Watch(ctx, metav1.ListOptions{LabelSelector: "team=web"})
	require.NoError(t, err)
	defer w.Stop()
	_, err = crs.Patch(ctx, "a", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"web"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, watch.Added, next(t, w).Type, "starts matching → ADDED")
	_, err = crs.Patch(ctx, "a", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"ops"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, watch.Deleted, next(t, w).Type, "stops matching → DELETED")
}
