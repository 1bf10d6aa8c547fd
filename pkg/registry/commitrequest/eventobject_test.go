package commitrequest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/save"
)

// eventCR is the CommitRequest an in-process watch event carries, shared or not.
func eventCR(t *testing.T, ev watch.Event) *gitsave.CommitRequest {
	t.Helper()
	switch o := ev.Object.(type) {
	case *gitsave.CommitRequest:
		return o
	case runtime.CacheableObject:
		return o.GetObject().(*gitsave.CommitRequest)
	}
	t.Fatalf("unexpected watch object %T", ev.Object)
	return nil
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

func sampleCR() *gitsave.CommitRequest {
	return &gitsave.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "demo", ResourceVersion: "7",
			Labels: map[string]string{"team": "web"}},
		Spec: gitsave.CommitRequestSpec{TargetRef: gitsave.TargetReference{Name: "dev"}, Message: "m"},
		Status: gitsave.CommitRequestStatus{Author: &gitsave.Author{Username: "jane", Groups: []string{"editors"}},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonAwaitingPush}}},
	}
}

// Many goroutines encoding the same change with two encoders: each encoder runs once,
// every caller gets its bytes, and the encoder works on a copy, never the shared object.
func TestEventObjectEncodesOncePerIdentifier(t *testing.T) {
	shared := sampleCR()
	o := newEventObject(shared)
	jsonCodec := serverCodecs.LegacyCodec(v1alpha1.SchemeGroupVersion)
	want, err := runtime.Encode(jsonCodec, sampleCR())
	require.NoError(t, err)

	var calls [2]atomic.Int32
	encoders := [2]func(runtime.Object, io.Writer) error{
		func(obj runtime.Object, w io.Writer) error {
			calls[0].Add(1)
			assert.NotSame(t, shared, obj, "the encoder owns its object")
			time.Sleep(10 * time.Millisecond) // let the other callers pile up behind the first
			return jsonCodec.Encode(obj, w)
		},
		func(obj runtime.Object, w io.Writer) error {
			calls[1].Add(1)
			cr := obj.(*gitsave.CommitRequest)
			cr.Labels["team"] = "scribbled" // allowed: it is the encoder's copy
			_, err := w.Write([]byte("other:" + cr.Name))
			return err
		},
	}
	ids := [2]runtime.Identifier{"json", "other"}

	const callers = 64
	var wg sync.WaitGroup
	out := make([][]byte, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			var buf bytes.Buffer
			errs[i] = o.CacheEncode(ids[i%2], encoders[i%2], &buf)
			out[i] = buf.Bytes()
		})
	}
	wg.Wait()

	assert.Equal(t, int32(1), calls[0].Load())
	assert.Equal(t, int32(1), calls[1].Load())
	for i := range callers {
		require.NoError(t, errs[i])
		if i%2 == 0 {
			assert.Equal(t, want, out[i])
		} else {
			assert.Equal(t, "other:a", string(out[i]))
		}
	}
	assert.Equal(t, sampleCR(), shared, "encoding left the shared object as it was")
	assert.Len(t, o.encodings, 2)
}

// A failed encoding is not retried: every caller for that identifier gets the error.
func TestEventObjectCachesEncodeErrors(t *testing.T) {
	o := newEventObject(sampleCR())
	boom := errors.New("boom")
	calls := 0
	encode := func(runtime.Object, io.Writer) error { calls++; return boom }
	for range 3 {
		assert.ErrorIs(t, o.CacheEncode("id", encode, io.Discard), boom)
	}
	assert.Equal(t, 1, calls)
}

// A writer that splices takes the cached bytes as they are.
func TestEventObjectSplicesCachedBytes(t *testing.T) {
	o := newEventObject(sampleCR())
	encode := func(obj runtime.Object, w io.Writer) error {
		_, err := w.Write([]byte("encoded"))
		return err
	}
	first, second := runtime.NewSpliceBuffer(), runtime.NewSpliceBuffer()
	require.NoError(t, o.CacheEncode("id", encode, first))
	require.NoError(t, o.CacheEncode("id", encode, second))
	assert.Equal(t, "encoded", string(second.Bytes()))
	assert.Same(t, &first.Bytes()[0], &second.Bytes()[0], "both hold the one cached encoding")
}

func TestEventObjectGetObjectAndDeepCopy(t *testing.T) {
	shared := sampleCR()
	o := newEventObject(shared)
	require.NoError(t, o.CacheEncode("id", func(_ runtime.Object, w io.Writer) error {
		_, err := w.Write([]byte("x"))
		return err
	}, io.Discard))

	got := o.GetObject().(*gitsave.CommitRequest)
	assert.Equal(t, shared, got)
	assert.NotSame(t, shared, got)
	got.Labels["team"] = "ops"
	got.Status.Conditions[0].Reason = "changed"
	got.Status.Author.Groups[0] = "changed"
	assert.Equal(t, sampleCR(), shared, "GetObject is a deep copy")

	kind := o.GetObjectKind()
	kind.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("CommitRequest"))
	assert.Equal(t, metav1.TypeMeta{}, shared.TypeMeta, "setting a kind does not reach the shared object")

	cp, ok := o.DeepCopyObject().(*eventObject)
	require.True(t, ok, "a copy is an eventObject too")
	assert.Equal(t, shared, cp.cr)
	assert.NotSame(t, shared, cp.cr)
	cp.cr.Labels["team"] = "ops"
	assert.Equal(t, "web", shared.Labels["team"], "DeepCopyObject copies the object")
	assert.Empty(t, cp.encodings, "the copy encodes its own object")
	assert.Len(t, o.encodings, 1)
}

// Every watcher that receives a change gets the one eventObject recorded for it,
// holding the stored object itself; a selector transition changes only the event
// type. Initial events and bookmarks are each watcher's own plain objects.
func TestWatchersShareTheRecordedEventObject(t *testing.T) {
	r, c := newTestREST(t, Options{BookmarkInterval: time.Minute})
	cr := create(t, r, "a")
	create(t, r, "b")

	from := &metainternalversion.ListOptions{ResourceVersion: cr.ResourceVersion}
	plain, err := r.Watch(janeCtx(), from)
	require.NoError(t, err)
	defer plain.Stop()
	selected, err := r.Watch(janeCtx(), &metainternalversion.ListOptions{ResourceVersion: cr.ResourceVersion,
		LabelSelector: labels.SelectorFromSet(labels.Set{"team": "web"})})
	require.NoError(t, err)
	defer selected.Stop()
	initial, err := r.Watch(janeCtx(), &metainternalversion.ListOptions{AllowWatchBookmarks: true})
	require.NoError(t, err)
	defer initial.Stop()

	// The watch from a's creation replays b's.
	replayed := nextEvent(t, plain)
	assert.Equal(t, watch.Added, replayed.Type)
	assert.Same(t, r.store.history[len(r.store.history)-1].obj, replayed.Object)

	for _, name := range []string{"a", "b"} {
		ev := nextEvent(t, initial)
		require.Equal(t, watch.Added, ev.Type)
		got, ok := ev.Object.(*gitsave.CommitRequest)
		require.True(t, ok, "initial events are plain objects")
		assert.Equal(t, name, got.Name)
		stored := r.store.objects[key("demo", name)].obj
		assert.Equal(t, stored, got)
		assert.NotSame(t, stored, got, "an initial event is the receiver's copy")
	}

	labelled := get(t, r, "a")
	labelled.Labels = map[string]string{"team": "web"}
	_, _, err = r.Update(janeCtx(), "a", rest.DefaultUpdatedObjectInfo(labelled), nil, nil, false, &metav1.UpdateOptions{})
	require.NoError(t, err)

	modified := nextEvent(t, plain)
	added := nextEvent(t, selected)
	alsoModified := nextEvent(t, initial)
	assert.Equal(t, watch.Modified, modified.Type)
	assert.Equal(t, watch.Added, added.Type, "a starts matching team=web")
	assert.Equal(t, watch.Modified, alsoModified.Type)
	shared, ok := modified.Object.(*eventObject)
	require.True(t, ok, "a change is delivered as its eventObject, not %T", modified.Object)
	assert.Same(t, shared, added.Object)
	assert.Same(t, shared, alsoModified.Object)
	assert.Same(t, r.store.objects[key("demo", "a")].obj, shared.cr, "the stored object is shared, not copied")

	require.Eventually(t, c.HasWaiters, 10*time.Second, time.Millisecond)
	c.Step(time.Minute)
	bm := nextEvent(t, initial)
	require.Equal(t, watch.Bookmark, bm.Type)
	acc, err := meta.Accessor(bm.Object)
	require.NoError(t, err, "bookmarks stay plain objects, which the watch handler reads metadata from")
	assert.Equal(t, shared.cr.ResourceVersion, acc.GetResourceVersion())
}

// A watch event converts to a Table through the registry's TableConvertor: directly
// from the object the wrapper hands out, and as kubectl get -w receives it from the
// watch handler, where two watchers share one encoding and a third encodes as JSON.
func TestTableOnWatchEvent(t *testing.T) {
	r, _ := newTestREST(t, Options{})
	cr := create(t, r, "a")

	w, err := r.Watch(janeCtx(), &metainternalversion.ListOptions{ResourceVersion: cr.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonAwaitingPush, Message: "connection refused"})
	ev := nextEvent(t, w)
	co, ok := ev.Object.(runtime.CacheableObject)
	require.True(t, ok)
	table, err := r.ConvertToTable(context.Background(), co.GetObject(), &metav1.TableOptions{})
	require.NoError(t, err)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []interface{}{"a", "dev", "jane", "False", v1alpha1.ReasonAwaitingPush, ""}, table.Rows[0].Cells[:6])

	type event struct {
		watcher string
		data    []byte
	}
	events := make(chan event, 8)
	onEvent := func(name string) func(int, []byte) {
		return func(i int, data []byte) { events <- event{name + strconv.Itoa(i), data} }
	}
	query := "resourceVersion=" + get(t, r, "a").ResourceVersion
	defer serveWatches(t, r, query, acceptTable, 2, true, onEvent("table"))()
	defer serveWatches(t, r, query, acceptJSON, 1, true, onEvent("json"))()
	r.Report(cr.UID, save.Progress{Reason: v1alpha1.ReasonCommitted, SHA: "0123456789abcdef", Branch: "main"})

	got := map[string][]byte{}
	for range 3 {
		select {
		case e := <-events:
			got[e.watcher] = e.data
		case <-time.After(10 * time.Second):
			t.Fatalf("events reached only %v", got)
		}
	}
	assert.Equal(t, got["table0"], got["table1"], "both Table watchers get the same bytes")

	var tableEvent struct {
		Type   string
		Object metav1.Table
	}
	require.NoError(t, json.Unmarshal(got["table0"], &tableEvent), string(got["table0"]))
	assert.Equal(t, "MODIFIED", tableEvent.Type)
	assert.Equal(t, "Table", tableEvent.Object.Kind)
	require.Len(t, tableEvent.Object.Rows, 1)
	cells := tableEvent.Object.Rows[0].Cells
	require.Len(t, cells, len(columns))
	assert.Equal(t, []interface{}{"a", "dev", "jane", "True", v1alpha1.ReasonCommitted, "01234567"}, cells[:6])
	assert.Equal(t, []interface{}{"True", "main", ""}, cells[7:], "Pushed, Branch, Finalized-By")
	assert.Contains(t, string(tableEvent.Object.Rows[0].Object.Raw), `"kind":"PartialObjectMetadata"`)

	var jsonEvent struct {
		Type   string
		Object v1alpha1.CommitRequest
	}
	require.NoError(t, json.Unmarshal(got["json0"], &jsonEvent), string(got["json0"]))
	assert.Equal(t, "MODIFIED", jsonEvent.Type)
	assert.Equal(t, schema.GroupVersionKind{Group: v1alpha1.GroupName, Version: "v1alpha1", Kind: "CommitRequest"},
		jsonEvent.Object.GroupVersionKind())
	assert.Equal(t, "0123456789abcdef", jsonEvent.Object.Status.SHA)

	change := r.store.history[len(r.store.history)-1].obj
	assert.Len(t, change.encodings, 2, "one encoding for the Table watchers, one for JSON")
	assert.Equal(t, metav1.TypeMeta{}, change.cr.TypeMeta, "encoding left the stored object as it was")
}
