package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
)

// tracker follows CommitRequests on one watch, the way `kubectl wait` does,
// and notes when each first showed Pushed=True.
type tracker struct {
	mu    sync.Mutex
	state map[string]*outcome // namespace/name
}

// outcome is what the watch said about one CommitRequest.
type outcome struct {
	done     chan struct{} // closed once Pushed=True or a terminal Ready/Stalled
	pushedAt time.Time     // when the event carrying Pushed=True arrived
	reason   string        // Ready reason when done
	sha      string
	files    int32
	barrier  bool // went through WaitingForEdits
	// When WaitingForEdits was first and last seen (event arrival times), and
	// when the request was first seen past it: how long the ordering barrier
	// held the request.
	barrierFrom, barrierTo time.Time
}

// barrierWait is how long the request stayed in WaitingForEdits (0 if never).
func (o *outcome) barrierWait() time.Duration {
	if o.barrierFrom.IsZero() || o.barrierTo.IsZero() {
		return 0
	}
	return o.barrierTo.Sub(o.barrierFrom)
}

func newTracker() *tracker { return &tracker{state: map[string]*outcome{}} }

// expect registers a name before it is created, so no event is missed.
func (t *tracker) expect(ns, name string) *outcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.get(ns + "/" + name)
}

func (t *tracker) get(key string) *outcome {
	o := t.state[key]
	if o == nil {
		o = &outcome{done: make(chan struct{})}
		t.state[key] = o
	}
	return o
}

// run watches commitrequests in ns ("" for all) matching selector until ctx
// ends, re-watching from the last resourceVersion if the stream closes.
// ready is closed once the first watch is established.
func (t *tracker) run(ctx context.Context, cs versioned.Interface, ns, selector string, ready chan<- struct{}) error {
	crs := cs.GitsaveV1alpha1().CommitRequests(ns)
	list, err := crs.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	rv := list.ResourceVersion
	for ctx.Err() == nil {
		w, err := crs.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if ready != nil {
			close(ready)
			ready = nil
		}
		for ev := range w.ResultChan() {
			at := time.Now()
			cr, ok := ev.Object.(*v1alpha1.CommitRequest)
			if !ok || ev.Type == watch.Error {
				continue
			}
			rv = cr.ResourceVersion
			t.observe(cr, at)
		}
		w.Stop()
	}
	return nil
}

func (t *tracker) observe(cr *v1alpha1.CommitRequest, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.get(cr.Namespace + "/" + cr.Name)
	select {
	case <-o.done:
		return
	default:
	}
	conds := cr.Status.Conditions
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReconciling); c != nil && c.Reason == v1alpha1.ReasonWaitingForEdits {
		o.barrier = true
		if o.barrierFrom.IsZero() {
			o.barrierFrom = at
		}
	} else if o.barrier && o.barrierTo.IsZero() {
		o.barrierTo = at
	}
	pushed := meta.IsStatusConditionTrue(conds, v1alpha1.ConditionPushed)
	ready := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	terminal := (ready != nil && ready.Status == metav1.ConditionTrue) ||
		meta.IsStatusConditionTrue(conds, v1alpha1.ConditionStalled)
	if !pushed && !terminal {
		return
	}
	if pushed {
		o.pushedAt = at
	}
	if ready != nil {
		o.reason = ready.Reason
	}
	if pushed && o.reason != v1alpha1.ReasonCommitted {
		// Pushed is only ever set with the Committed outcome; keep what we saw.
		o.reason = "Pushed/" + o.reason
	}
	o.sha, o.files = cr.Status.SHA, cr.Status.FilesChanged
	close(o.done)
}

// wait returns the outcome once done, or false after timeout.
func (o *outcome) wait(timeout time.Duration) bool {
	select {
	case <-o.done:
		return true
	case <-time.After(timeout):
		return false
	}
}
