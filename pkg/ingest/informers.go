package ingest

import (
	"context"
	"errors"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/gitsave/gitsave/pkg/attribution"
	"github.com/gitsave/gitsave/pkg/ingest/sanitize"
	"github.com/gitsave/gitsave/pkg/save"
)

// watcher is the informer of one (resource, namespace).
//
// It is a low-level cache.Controller over an atomic RealFIFO rather than a
// SharedIndexInformer because the FIFO hands over every list — the initial one
// and each relist after a watch expired (410) — as ONE ReplacedAll delta.
// That is exactly the boundary the ingest needs: list replays are not edits
// (no attribution, no per-object events) but a reason to resync the targets,
// while Added/Updated/Deleted deltas are single watch events.
type watcher struct {
	key    informerKey
	c      *Controller
	cancel context.CancelFunc

	// Guarded by Controller.mu.
	objects map[string]*objectState // by name
	synced  bool                    // a list has been applied
	stopped bool
	err     error // last list/watch failure, until the next list succeeds
}

// objectState is what the ingest remembers of one live object.
type objectState struct {
	// content is the sanitized YAML; byte equality means "no change".
	content    []byte
	apiVersion string
	// controlled objects are not mirrored, but their changes still consume
	// admission facts (see upsert).
	controlled bool
	// deleting is set once deletionTimestamp is seen (finalizers pending).
	deleting bool
	// deleteTried records that the DELETE was matched against the index when
	// deleting was first seen on a watch event; deleteBy is its author if found.
	deleteTried bool
	deleteBy    *save.Author
}

func (c *Controller) startWatcher(ctx context.Context, k informerKey) *watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{key: k, c: c, cancel: cancel, objects: map[string]*objectState{}}
	rc := c.cfg.Dynamic.Resource(k.GVR).Namespace(k.Namespace)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return rc.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return rc.Watch(ctx, o)
		},
	}, c.cfg.Dynamic)
	fifo := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{
		Name:         "gitsave-ingest " + k.String(),
		KeyFunction:  cache.MetaNamespaceKeyFunc,
		AtomicEvents: true,
	})
	ctrl := cache.New(&cache.Config{
		Queue:                        fifo,
		ListerWatcher:                lw,
		ObjectType:                   &unstructured.Unstructured{},
		ObjectDescription:            k.String(),
		Process:                      w.process,
		WatchErrorHandlerWithContext: w.watchError,
	})
	go ctrl.RunWithContext(ctx)
	return w
}

// stop ends the watch; called with Controller.mu held. A delta being
// processed right now sees stopped and is dropped.
func (w *watcher) stop() {
	w.stopped = true
	w.cancel()
}

func (w *watcher) process(obj any, _ bool) error {
	deltas, ok := obj.(cache.Deltas)
	if !ok {
		return errors.New("ingest: process expects cache.Deltas")
	}
	for _, d := range deltas {
		switch d.Type {
		case cache.ReplacedAll:
			info, ok := d.Object.(cache.ReplacedAllInfo)
			if !ok {
				return errors.New("ingest: ReplacedAll delta without ReplacedAllInfo")
			}
			w.replaceAll(info.Objects)
		case cache.Added:
			w.upsert(attribution.OpCreate, d.Object)
		case cache.Updated, cache.Sync, cache.Replaced:
			w.upsert(attribution.OpUpdate, d.Object)
		case cache.Deleted:
			w.remove(d.Object)
		}
	}
	return nil
}

// stateOf sanitizes a live object; ok is false for objects that cannot be
// mirrored (logged).
func (w *watcher) stateOf(u *unstructured.Unstructured) (*objectState, bool) {
	b, err := sanitize.Marshal(u)
	if err != nil {
		w.c.log.Error(err, "object cannot be mirrored", "resource", w.key.String(), "name", u.GetName())
		return nil, false
	}
	return &objectState{
		content:    b,
		apiVersion: u.GetAPIVersion(),
		controlled: sanitize.ControlledByAnother(u),
		deleting:   u.GetDeletionTimestamp() != nil,
	}, true
}

// replaceAll applies a list (initial or relist): the objects become the known
// state without events or attribution, and every target fed by this watch is
// resynced from it — that is what brings the mirror back after missed events.
func (w *watcher) replaceAll(objs []any) {
	next := make(map[string]*objectState, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if st, ok := w.stateOf(u); ok {
			next[u.GetName()] = st
		}
	}
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.stopped {
		return
	}
	for name, st := range next {
		// A pending finalizer deletion keeps the author matched earlier.
		if old := w.objects[name]; old != nil && old.deleting && st.deleting {
			st.deleteTried, st.deleteBy = old.deleteTried, old.deleteBy
		}
	}
	w.objects = next
	w.synced = true
	if w.err != nil {
		w.err = nil
		c.kickReconcile()
	}
	for _, t := range c.routes.byInformer[w.key] {
		c.pendingResync[t] = true
	}
	c.flushResyncsLocked()
}

// upsert handles one ADDED or MODIFIED watch event.
func (w *watcher) upsert(op string, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	c := w.c
	observed := c.cfg.Clock.Now() // at delivery: the index compares it with admission times
	next, ok := w.stateOf(u)
	if !ok {
		return
	}
	name := u.GetName()
	key := w.editKey(name)

	c.mu.Lock()
	defer c.mu.Unlock()
	if w.stopped {
		return
	}
	prev := w.objects[name]
	w.objects[name] = next

	// Only a change of the mirrored bytes is an edit the webhook recorded a
	// fact for. Controlled objects are included: a person's edit of, say, a
	// ReplicaSet must still be consumed, or it would hold up that person's
	// next Save until the barrier's settle timeout.
	changed := prev == nil || !sanitize.SameContent(prev.content, next.content)
	var author save.Author
	attributed := false
	if changed {
		author, attributed = c.cfg.Index.MatchEvent(attribution.Event{
			Key: key, Operation: op, Observed: observed,
			Content: attribution.ContentOf(next.apiVersion, next.content),
		})
	}
	// With finalizers the DELETE is admitted, then shows as the MODIFIED that
	// sets deletionTimestamp; the DELETED comes when the finalizers are done.
	// The fact is matched now and its author kept for the DELETED.
	switch {
	case next.deleting && (prev == nil || !prev.deleting):
		next.deleteTried = true
		if a, ok := c.cfg.Index.MatchEvent(attribution.Event{Key: key, Operation: attribution.OpDelete, Observed: observed}); ok {
			next.deleteBy = &a
		}
	case next.deleting:
		next.deleteTried, next.deleteBy = prev.deleteTried, prev.deleteBy
	}

	mirroredBefore := prev != nil && !prev.controlled
	switch {
	case !next.controlled && (changed || !mirroredBefore):
		c.submitLocked(w.key, name, next.content, c.authorOr(author, attributed), key)
	case next.controlled && mirroredBefore:
		// A controller adopted it: its owner is what is mirrored now.
		c.submitLocked(w.key, name, nil, c.authorOr(author, attributed), key)
	}
}

// remove handles one DELETED watch event.
func (w *watcher) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	c := w.c
	observed := c.cfg.Clock.Now()
	name := u.GetName()
	key := w.editKey(name)

	c.mu.Lock()
	defer c.mu.Unlock()
	if w.stopped {
		return
	}
	prev := w.objects[name]
	delete(w.objects, name)

	var author save.Author
	attributed := false
	switch {
	case prev != nil && prev.deleteBy != nil:
		author, attributed = *prev.deleteBy, true
	case prev != nil && prev.deleteTried:
		// Matched (and missed) when deletionTimestamp appeared; matching again
		// could take the fact of a later delete of a re-created object.
	default:
		author, attributed = c.cfg.Index.MatchEvent(attribution.Event{Key: key, Operation: attribution.OpDelete, Observed: observed})
	}
	if prev != nil && !prev.controlled {
		c.submitLocked(w.key, name, nil, c.authorOr(author, attributed), key)
	}
}

// watchError records list/watch failures for the WatchRule status. An expired
// watch (410) is routine: the reflector relists, which resyncs.
func (w *watcher) watchError(ctx context.Context, _ *cache.Reflector, err error) {
	if ctx.Err() != nil || errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return
	}
	w.c.log.Info("list/watch failed", "resource", w.key.String(), "err", err.Error())
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.stopped {
		return
	}
	if w.err == nil || w.err.Error() != err.Error() {
		w.err = err
		c.kickReconcile()
	}
}

func (w *watcher) editKey(name string) save.EditKey {
	return save.EditKey{Group: w.key.GVR.Group, Resource: w.key.GVR.Resource, Namespace: w.key.Namespace, Name: name}
}
