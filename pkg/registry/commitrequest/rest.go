// Package commitrequest serves commitrequests.gitsave.dev from memory: no etcd. The
// objects' status is the branch workers' progress, so the storage lives in the
// workers' process and every transition is a watch event.
package commitrequest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/save"
)

// TargetChecker says whether a GitTarget exists.
type TargetChecker interface {
	TargetExists(ctx context.Context, namespace, name string) (bool, error)
}

// Options configure the storage. Zero values take the defaults.
type Options struct {
	Clock clock.WithTicker
	// HistorySize is how many changes are kept for watches that resume from a
	// resourceVersion; older ones get 410 Gone.
	HistorySize int
	// BookmarkInterval is how often an idle watch that allows bookmarks gets one.
	BookmarkInterval time.Duration
	// Retention is how long a resolved request is kept before it is deleted.
	Retention time.Duration
	// Targets checks spec.targetRef.name at create.
	Targets TargetChecker
	// Barrier returns the author's edits to resources routed to the target that were
	// admitted but not yet seen on the watch: the edits made "before Save" that the
	// request's commit waits for.
	Barrier func(author, namespace, target string) []save.EditKey
}

// REST is the storage of commitrequests.
type REST struct {
	tableConvertor
	store    *store
	strategy strategy
	clock    clock.WithTicker
	opts     Options
	saver    atomic.Pointer[saverBox]
}

type saverBox struct{ save.Saver }

var (
	_ rest.StandardStorage      = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.CategoriesProvider   = &REST{}
	_ rest.TableConvertor       = &REST{}
	_ save.Reporter             = &REST{}
)

// NewREST makes the storage; typer is the scheme.
func NewREST(typer runtime.ObjectTyper, opts Options) *REST {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = 1000
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = 30 * time.Second
	}
	if opts.Retention <= 0 {
		opts.Retention = time.Hour
	}
	return &REST{
		tableConvertor: tableConvertor{clock: opts.Clock},
		store:          newStore(opts.HistorySize),
		strategy:       newStrategy(typer, opts.Clock),
		clock:          opts.Clock,
		opts:           opts,
	}
}

// SetSaver connects the branch workers. Until then requests stay pending.
func (r *REST) SetSaver(s save.Saver) { r.saver.Store(&saverBox{s}) }

func (r *REST) currentSaver() save.Saver {
	if b := r.saver.Load(); b != nil {
		return b.Saver
	}
	return nil
}

func (r *REST) New() runtime.Object     { return &gitsave.CommitRequest{} }
func (r *REST) NewList() runtime.Object { return &gitsave.CommitRequestList{} }
func (r *REST) Destroy()                {}

func (r *REST) NamespaceScoped() bool   { return true }
func (r *REST) GetSingularName() string { return "commitrequest" }
func (r *REST) ShortNames() []string    { return []string{"creq"} }
func (r *REST) Categories() []string    { return []string{"gitsave"} }

// Create stamps the author from the request, validates, checks the target, stores the
// request and hands it to the branch worker.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	cr, ok := obj.(*gitsave.CommitRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a CommitRequest: %T", obj))
	}
	if u, ok := genericapirequest.UserFrom(ctx); !ok || u.GetName() == "" {
		return nil, apierrors.NewForbidden(gitsave.Resource("commitrequests"), cr.Name,
			fmt.Errorf("a CommitRequest needs an authenticated user"))
	}
	rest.FillObjectMetaSystemFields(cr)
	generated := cr.Name == "" && cr.GenerateName != ""
	if generated {
		cr.Name = r.strategy.GenerateName(cr.GenerateName)
	}
	if err := rest.BeforeCreate(r.strategy, ctx, cr); err != nil {
		return nil, err
	}
	truncateTimes(cr)
	applyProgress(cr, initialProgress(r.currentSaver() != nil), cr.CreationTimestamp)
	if createValidation != nil {
		if err := createValidation(ctx, cr.DeepCopy()); err != nil {
			return nil, err
		}
	}
	if err := r.checkTarget(ctx, cr); err != nil {
		return nil, err
	}
	if dryrun.IsDryRun(options.DryRun) {
		return cr, nil
	}

	stored, err := r.store.create(cr)
	// A generated name that collides is retried with another, as the generic
	// registry does.
	for attempt := 0; generated && apierrors.IsAlreadyExists(err) && attempt < 8; attempt++ {
		cr.Name = r.strategy.GenerateName(cr.GenerateName)
		stored, err = r.store.create(cr)
	}
	if err != nil {
		return nil, err
	}
	if s := r.currentSaver(); s != nil {
		req := requestFor(stored, r.clock.Now())
		if r.opts.Barrier != nil {
			req.Barrier = r.opts.Barrier(req.Author.Username, req.Namespace, req.Target)
		}
		s.Attach(req)
	}
	return stored, nil
}

// checkTarget refuses a request whose GitTarget does not exist, naming the field.
func (r *REST) checkTarget(ctx context.Context, cr *gitsave.CommitRequest) error {
	if r.opts.Targets == nil {
		return nil
	}
	exists, err := r.opts.Targets.TargetExists(ctx, cr.Namespace, cr.Spec.TargetRef.Name)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("cannot check GitTarget %q: %v", cr.Spec.TargetRef.Name, err))
	}
	if !exists {
		notFound := field.NotFound(field.NewPath("spec", "targetRef", "name"), cr.Spec.TargetRef.Name)
		notFound.Detail = fmt.Sprintf("no GitTarget %q in namespace %q", cr.Spec.TargetRef.Name, cr.Namespace)
		return apierrors.NewInvalid(gitsave.Kind("CommitRequest"), cr.Name, field.ErrorList{notFound})
	}
	return nil
}

// truncateTimes keeps timestamps at the second, as they are on the wire: a stored
// object then equals what a client read, and an unchanged update is recognised.
func truncateTimes(cr *gitsave.CommitRequest) {
	cr.CreationTimestamp = metav1.NewTime(cr.CreationTimestamp.Truncate(time.Second))
	for i := range cr.ManagedFields {
		if t := cr.ManagedFields[i].Time; t != nil {
			cr.ManagedFields[i].Time = ptr.To(metav1.NewTime(t.Truncate(time.Second)))
		}
	}
	for i := range cr.Status.Conditions {
		c := &cr.Status.Conditions[i]
		c.LastTransitionTime = metav1.NewTime(c.LastTransitionTime.Truncate(time.Second))
	}
}

func requestFor(cr *gitsave.CommitRequest, received time.Time) save.Request {
	req := save.Request{
		UID: cr.UID, Namespace: cr.Namespace, Name: cr.Name,
		Target:     cr.Spec.TargetRef.Name,
		Message:    cr.Spec.Message,
		CloseDelay: time.Duration(cr.Spec.CloseDelaySeconds) * time.Second,
		Received:   received,
	}
	if a := cr.Status.Author; a != nil {
		req.Author = save.Author{Username: a.Username, UID: a.UID, Groups: append([]string(nil), a.Groups...)}
	}
	return req
}

func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	cr, ok := r.store.get(genericapirequest.NamespaceValue(ctx), name)
	if !ok {
		return nil, apierrors.NewNotFound(gitsave.Resource("commitrequests"), name)
	}
	return cr, nil
}

func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	pred := predicate(nil, nil)
	if options != nil {
		pred = predicate(options.LabelSelector, options.FieldSelector)
		if err := r.checkListRV(options); err != nil {
			return nil, err
		}
	}
	items, rv := r.store.list(genericapirequest.NamespaceValue(ctx), func(cr *gitsave.CommitRequest) bool {
		return matches(pred, cr)
	})
	list := &gitsave.CommitRequestList{Items: items}
	list.ResourceVersion = formatRV(rv)
	return list, nil
}

// checkListRV answers a list at a resourceVersion the store cannot serve: only the
// current state is kept, so an exact older version is gone and a future one too large.
func (r *REST) checkListRV(options *metainternalversion.ListOptions) error {
	if options.ResourceVersion == "" || options.ResourceVersion == "0" {
		return nil
	}
	rv, err := parseRV(options.ResourceVersion)
	if err != nil {
		return err
	}
	current := r.store.currentRV()
	if rv > current {
		return apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, current), 1)
	}
	if options.ResourceVersionMatch == metav1.ResourceVersionMatchExact && rv != current {
		return apierrors.NewResourceExpired(fmt.Sprintf("resourceVersion %d is no longer available for an exact list", rv))
	}
	return nil
}

func (r *REST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	if options == nil {
		options = &metainternalversion.ListOptions{}
	}
	start := watchStart{rv: options.ResourceVersion, bookmarks: options.AllowWatchBookmarks}
	switch {
	case options.SendInitialEvents != nil && *options.SendInitialEvents:
		// The end-of-initial-events bookmark goes only to clients that accept
		// bookmarks: the server defaults legacy watches to sendInitialEvents too.
		start.initialEvents, start.endBookmark = true, options.AllowWatchBookmarks
	case options.SendInitialEvents == nil && (start.rv == "" || start.rv == "0"):
		// Legacy semantics: the current state as ADDED events, then changes.
		start.initialEvents = true
	}
	return r.store.watch(ctx, genericapirequest.NamespaceValue(ctx),
		predicate(options.LabelSelector, options.FieldSelector), start, r.clock, r.opts.BookmarkInterval)
}

// Update allows only changes that leave the spec alone (labels, annotations, owner
// references); the status is the server's. An update that changes nothing returns the
// stored object without a new resourceVersion. A missing object is created when the
// client may create (server-side apply).
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	for {
		old, exists := r.store.get(ns, name)
		if !exists {
			if !forceAllowCreate {
				return nil, false, apierrors.NewNotFound(gitsave.Resource("commitrequests"), name)
			}
			obj, err := objInfo.UpdatedObject(ctx, nil)
			if err != nil {
				return nil, false, err
			}
			created, err := r.Create(ctx, obj, createValidation, &metav1.CreateOptions{DryRun: options.DryRun, FieldManager: options.FieldManager})
			return created, err == nil, err
		}
		obj, err := objInfo.UpdatedObject(ctx, old.DeepCopy())
		if err != nil {
			return nil, false, err
		}
		cr := obj.(*gitsave.CommitRequest)
		clientRV := cr.ResourceVersion
		if clientRV != "" && clientRV != old.ResourceVersion {
			return nil, false, conflict(name)
		}
		cr.ResourceVersion = old.ResourceVersion
		if err := rest.BeforeUpdate(r.strategy, ctx, cr, old); err != nil {
			return nil, false, err
		}
		if updateValidation != nil {
			if err := updateValidation(ctx, cr, old); err != nil {
				return nil, false, err
			}
		}
		truncateTimes(cr)
		if equality.Semantic.DeepEqual(cr, old) {
			return old, false, nil
		}
		if dryrun.IsDryRun(options.DryRun) {
			return cr, false, nil
		}
		stored, err := r.store.replace(cr, old.ResourceVersion)
		if apierrors.IsConflict(err) && clientRV == "" {
			continue // the worker moved the status meanwhile: redo on the new version
		}
		return stored, false, err
	}
}

// Delete removes a request; a pending one is detached from its window, which keeps its
// edits.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	for {
		old, exists := r.store.get(ns, name)
		if !exists {
			return nil, false, apierrors.NewNotFound(gitsave.Resource("commitrequests"), name)
		}
		if p := options.Preconditions; p != nil {
			if p.UID != nil && *p.UID != old.UID {
				return nil, false, apierrors.NewConflict(gitsave.Resource("commitrequests"), name,
					fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, old.UID))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != old.ResourceVersion {
				return nil, false, apierrors.NewConflict(gitsave.Resource("commitrequests"), name,
					fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, old.ResourceVersion))
			}
		}
		if deleteValidation != nil {
			if err := deleteValidation(ctx, old); err != nil {
				return nil, false, err
			}
		}
		if dryrun.IsDryRun(options.DryRun) {
			return old, true, nil
		}
		pending := !r.store.isTerminal(old.UID)
		deleted, err := r.store.remove(ns, name, old.ResourceVersion)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if s := r.currentSaver(); s != nil && pending {
			s.Cancel(deleted.UID)
		}
		return deleted, true, nil
	}
}

// DeleteCollection deletes every request the options select (namespace deletion).
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	listed, err := r.List(ctx, listOptions)
	if err != nil {
		return nil, err
	}
	out := &gitsave.CommitRequestList{}
	for _, item := range listed.(*gitsave.CommitRequestList).Items {
		obj, _, err := r.Delete(ctx, item.Name, deleteValidation, options)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *obj.(*gitsave.CommitRequest))
	}
	return out, nil
}

// RunGarbageCollection deletes resolved requests older than the retention period,
// emitting DELETED, until ctx ends.
func (r *REST) RunGarbageCollection(ctx context.Context, every time.Duration) {
	t := r.clock.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			r.store.expire(r.clock.Now().Add(-r.opts.Retention))
		}
	}
}
