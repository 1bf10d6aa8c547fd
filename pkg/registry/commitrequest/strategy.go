package commitrequest

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/clock"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/validation"
)

// strategy holds the create and update rules of CommitRequests: the author is stamped
// from the authenticated request, the status is the server's, the spec is immutable.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	clock clock.PassiveClock
}

func newStrategy(typer runtime.ObjectTyper, c clock.PassiveClock) strategy {
	return strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, clock: c}
}

func (strategy) NamespaceScoped() bool { return true }

// PrepareForCreate replaces whatever the client sent as status with the author from
// the request's user info and the first conditions. Create checks that a user is
// present before calling it.
func (s strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	cr := obj.(*gitsave.CommitRequest)
	cr.Generation = 1
	cr.Status = gitsave.CommitRequestStatus{}
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		cr.Status.Author = &gitsave.Author{
			Username: u.GetName(),
			UID:      u.GetUID(),
			Groups:   append([]string(nil), u.GetGroups()...),
		}
	}
	now := metav1.NewTime(s.clock.Now().Truncate(time.Second))
	meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionAttributed, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRequestUser,
		Message:            fmt.Sprintf("attributed to %s from the authenticated request", cr.Status.Author.Username),
		ObservedGeneration: cr.Generation, LastTransitionTime: now,
	})
}

func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateCommitRequest(obj.(*gitsave.CommitRequest))
}

func (strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string { return nil }
func (strategy) Canonicalize(obj runtime.Object)                                   {}
func (strategy) AllowCreateOnUpdate(ctx context.Context) bool                      { return true }
func (strategy) AllowUnconditionalUpdate(ctx context.Context) bool                 { return true }

// PrepareForUpdate keeps the server-owned status; only metadata can change (the spec
// is checked by ValidateUpdate).
func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	obj.(*gitsave.CommitRequest).Status = old.(*gitsave.CommitRequest).Status
}

func (strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateCommitRequestUpdate(obj.(*gitsave.CommitRequest), old.(*gitsave.CommitRequest))
}

func (strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string { return nil }

// getAttrs returns the labels and the fields a client may select on.
func getAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	cr, ok := obj.(*gitsave.CommitRequest)
	if !ok {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("not a CommitRequest: %T", obj))
	}
	return labels.Set(cr.Labels), selectableFields(cr), nil
}

func selectableFields(cr *gitsave.CommitRequest) fields.Set {
	author := ""
	if cr.Status.Author != nil {
		author = cr.Status.Author.Username
	}
	return fields.Set{
		"metadata.name":              cr.Name,
		"metadata.namespace":         cr.Namespace,
		v1alpha1.FieldTargetName:     cr.Spec.TargetRef.Name,
		v1alpha1.FieldAuthorUsername: author,
	}
}

func predicate(l labels.Selector, f fields.Selector) storage.SelectionPredicate {
	if l == nil {
		l = labels.Everything()
	}
	if f == nil {
		f = fields.Everything()
	}
	return storage.SelectionPredicate{Label: l, Field: f, GetAttrs: getAttrs}
}
