package commitrequest

import (
	"context"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
)

// watchStart says where a watch begins, from the request's resourceVersion and
// sendInitialEvents.
type watchStart struct {
	rv string
	// initialEvents: the current state is sent as ADDED events first.
	initialEvents bool
	// endBookmark: after the initial events, a bookmark annotated
	// k8s.io/initial-events-end (the sendInitialEvents=true protocol).
	endBookmark bool
	bookmarks   bool
}

// watcher delivers one client's events. The store offers it every change without
// blocking; its own goroutine filters them through the client's selectors and sends
// them on, with periodic bookmarks while idle.
type watcher struct {
	store   *store
	pred    storage.SelectionPredicate
	in      chan change
	out     chan watch.Event
	initial []watch.Event
	done    chan struct{}
	stop    sync.Once
	// delivered is the resourceVersion every change up to which was handled; it is
	// what a bookmark may promise.
	delivered uint64
	bookmarks bool
}

const watcherBuffer = 1024

// watch registers a watcher starting as asked. The initial state and the replayed
// history are computed under the store lock together with the registration, so no
// change falls between them.
func (s *store) watch(ctx context.Context, namespace string, pred storage.SelectionPredicate, start watchStart, c clock.WithTicker, bookmarkEvery time.Duration) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	w := &watcher{
		store: s, pred: pred,
		in:        make(chan change, watcherBuffer),
		out:       make(chan watch.Event),
		done:      make(chan struct{}),
		bookmarks: start.bookmarks,
	}
	inNamespace := func(cr *gitsave.CommitRequest) bool { return namespace == "" || cr.Namespace == namespace }

	switch {
	case start.initialEvents:
		if start.rv != "" && start.rv != "0" {
			rv, err := parseRV(start.rv)
			if err != nil {
				return nil, err
			}
			if rv > s.rv {
				return nil, storage.NewTooLargeResourceVersionError(rv, s.rv, 1)
			}
		}
		for _, e := range sortedEntries(s.objects) {
			if inNamespace(e.obj) && matches(pred, e.obj) {
				w.initial = append(w.initial, watch.Event{Type: watch.Added, Object: e.obj})
			}
		}
		if start.endBookmark {
			w.initial = append(w.initial, watch.Event{Type: watch.Bookmark, Object: bookmark(s.rv, true)})
		}
		w.delivered = s.rv
	case start.rv == "" || start.rv == "0":
		w.delivered = s.rv
	default:
		rv, err := parseRV(start.rv)
		if err != nil {
			return nil, err
		}
		if rv > s.rv {
			return nil, storage.NewTooLargeResourceVersionError(rv, s.rv, 1)
		}
		if rv < s.expired {
			return nil, apierrors.NewResourceExpired("too old resource version: " + start.rv + " (" + formatRV(s.expired) + ")")
		}
		for _, c := range s.history {
			if c.rv > rv && inNamespace(c.obj.cr) {
				if ev, ok := w.translate(c); ok {
					w.initial = append(w.initial, ev)
				}
			}
		}
		w.delivered = s.rv
	}
	s.watchers[w] = struct{}{}
	go w.run(ctx, inNamespace, c, bookmarkEvery)
	return w, nil
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.out }

func (w *watcher) Stop() {
	w.stop.Do(func() {
		close(w.done)
		w.store.mu.Lock()
		delete(w.store.watchers, w)
		w.store.mu.Unlock()
	})
}

// offer hands a change over without blocking; false means the buffer is full.
// Called with the store lock held.
func (w *watcher) offer(c change) bool {
	select {
	case w.in <- c:
		return true
	default:
		return false
	}
}

// overflow ends a watcher that fell behind, after what it already buffered. Called
// with the store lock held, once, after it was removed from the store.
func (w *watcher) overflow() { close(w.in) }

func (w *watcher) run(ctx context.Context, inNamespace func(*gitsave.CommitRequest) bool, c clock.WithTicker, bookmarkEvery time.Duration) {
	defer close(w.out)
	defer w.Stop()
	for _, ev := range w.initial {
		if !w.send(ctx, ev) {
			return
		}
	}
	w.initial = nil

	var tick <-chan time.Time
	if w.bookmarks && bookmarkEvery > 0 {
		t := c.NewTicker(bookmarkEvery)
		defer t.Stop()
		tick = t.C()
	}
	for {
		select {
		case ch, ok := <-w.in:
			if !ok {
				return
			}
			w.delivered = ch.rv
			if !inNamespace(ch.obj.cr) {
				continue
			}
			if ev, ok := w.translate(ch); ok && !w.send(ctx, ev) {
				return
			}
		case <-tick:
			if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bookmark(w.delivered, false)}) {
				return
			}
		case <-ctx.Done():
			return
		case <-w.done:
			return
		}
	}
}

// send delivers an event. Changes, live or replayed from history, go out as their
// shared eventObject; initial events carry stored objects, copied here so the
// receiver owns them; bookmarks are made per watcher.
func (w *watcher) send(ctx context.Context, ev watch.Event) bool {
	if cr, ok := ev.Object.(*gitsave.CommitRequest); ok && ev.Type != watch.Bookmark {
		ev.Object = cr.DeepCopy()
	}
	select {
	case w.out <- ev:
		return true
	case <-ctx.Done():
		return false
	case <-w.done:
		return false
	}
}

// translate turns a change into the event this watcher's selectors see: an object
// that stops matching is DELETED for it, one that starts matching is ADDED. The event
// carries the change's shared eventObject whatever its type: the event type is part
// of the watch encoder's identifier, so a translated event gets its own encoding.
func (w *watcher) translate(c change) (watch.Event, bool) {
	now := matches(w.pred, c.obj.cr)
	switch c.typ {
	case watch.Added, watch.Deleted:
		return watch.Event{Type: c.typ, Object: c.obj}, now
	}
	before := c.prev != nil && matches(w.pred, c.prev)
	switch {
	case before && now:
		return watch.Event{Type: watch.Modified, Object: c.obj}, true
	case now:
		return watch.Event{Type: watch.Added, Object: c.obj}, true
	case before:
		return watch.Event{Type: watch.Deleted, Object: c.obj}, true
	}
	return watch.Event{}, false
}

func matches(pred storage.SelectionPredicate, cr *gitsave.CommitRequest) bool {
	ok, err := pred.Matches(cr)
	return err == nil && ok
}

func bookmark(rv uint64, initialEventsEnd bool) *gitsave.CommitRequest {
	b := &gitsave.CommitRequest{ObjectMeta: metav1.ObjectMeta{ResourceVersion: formatRV(rv)}}
	if initialEventsEnd {
		b.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return b
}

func sortedEntries(m map[string]*entry) []*entry {
	out := make([]*entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

func parseRV(s string) (uint64, error) {
	rv, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest("invalid resourceVersion: " + s)
	}
	return rv, nil
}
