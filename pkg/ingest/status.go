package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
)

// ConditionReady is the WatchRule condition the ingest maintains.
const ConditionReady = "Ready"

// Reasons of the WatchRule Ready condition. When several problems apply the
// reason is the first in this order and the message lists them all.
const (
	ReasonReady                    = "Ready"
	ReasonTargetNotFound           = "TargetNotFound"
	ReasonWatchFailed              = "WatchFailed"
	ReasonDiscoveryFailed          = "DiscoveryFailed"
	ReasonResourceUnknown          = "ResourceUnknown"
	ReasonWildcardUnsupported      = "WildcardUnsupported"
	ReasonClusterScopedUnsupported = "ClusterScopedUnsupported"
	ReasonSecretsSkipped           = "SecretsSkipped"
)

var reasonOrder = []string{
	ReasonTargetNotFound, ReasonWatchFailed, ReasonDiscoveryFailed, ReasonResourceUnknown,
	ReasonWildcardUnsupported, ReasonClusterScopedUnsupported, ReasonSecretsSkipped,
}

// ruleStatus is the status a WatchRule should have.
type ruleStatus struct {
	generation int64
	cond       metav1.Condition
	watching   []string
}

// ruleStatusFor summarizes what a rule resolved to. watching are the
// resources actually routed (none when the target is missing).
func ruleStatusFor(rule *configv1alpha1.WatchRule, problems []problem, watching []schema.GroupVersionResource) ruleStatus {
	st := ruleStatus{generation: rule.Generation}
	for _, gvr := range watching {
		st.watching = append(st.watching, displayGR(gvr.GroupResource()))
	}
	st.cond = metav1.Condition{Type: ConditionReady, ObservedGeneration: rule.Generation}
	if len(problems) == 0 {
		st.cond.Status = metav1.ConditionTrue
		st.cond.Reason = ReasonReady
		st.cond.Message = fmt.Sprintf("mirroring %s into GitTarget %s", strings.Join(st.watching, ", "), rule.Spec.TargetRef.Name)
		return st
	}
	problems = slices.Clone(problems)
	slices.SortStableFunc(problems, func(a, b problem) int {
		return slices.Index(reasonOrder, a.Reason) - slices.Index(reasonOrder, b.Reason)
	})
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Message
	}
	st.cond.Status = metav1.ConditionFalse
	st.cond.Reason = problems[0].Reason
	st.cond.Message = strings.Join(msgs, "; ")
	if len(st.watching) > 0 {
		st.cond.Message += "; still mirroring " + strings.Join(st.watching, ", ")
	}
	return st
}

// upToDate reports whether the rule already shows st (LastTransitionTime aside).
func (st ruleStatus) upToDate(rule *configv1alpha1.WatchRule) bool {
	cur := meta.FindStatusCondition(rule.Status.Conditions, ConditionReady)
	return rule.Status.ObservedGeneration == st.generation &&
		slices.Equal(rule.Status.Watching, st.watching) &&
		cur != nil && cur.Status == st.cond.Status && cur.Reason == st.cond.Reason &&
		cur.Message == st.cond.Message && cur.ObservedGeneration == st.cond.ObservedGeneration
}

// equal compares two computed statuses.
func (st ruleStatus) equal(o ruleStatus) bool {
	return st.generation == o.generation && slices.Equal(st.watching, o.watching) &&
		st.cond.Status == o.cond.Status && st.cond.Reason == o.cond.Reason &&
		st.cond.Message == o.cond.Message && st.cond.ObservedGeneration == o.cond.ObservedGeneration
}

// writtenStatus remembers the last status written to a rule, and the
// resourceVersion the rule had before: while the informer still shows that
// version it has not caught up with the write, and writing the same status
// again would only fail with a conflict.
type writtenStatus struct {
	status ruleStatus
	baseRV string
}

// writtenKey names one incarnation of a rule: a re-created rule is a new one.
type writtenKey struct {
	rule string
	uid  types.UID
}

func writtenKeyOf(r *configv1alpha1.WatchRule) writtenKey {
	return writtenKey{rule: ruleKey(r), uid: r.UID}
}

// writeStatus updates the rule's status when it differs. A conflict is not an
// error worth logging: the newer rule arrives through the informer and the
// next reconcile writes again.
func (c *Controller) writeStatus(ctx context.Context, rule *configv1alpha1.WatchRule, st ruleStatus) {
	if st.upToDate(rule) {
		return
	}
	if w, ok := c.written[writtenKeyOf(rule)]; ok && w.baseRV == rule.ResourceVersion && w.status.equal(st) {
		return
	}
	upd := rule.DeepCopy()
	upd.Status.ObservedGeneration = st.generation
	upd.Status.Watching = st.watching
	cond := st.cond
	cond.LastTransitionTime = metav1.NewTime(c.cfg.Clock.Now())
	meta.SetStatusCondition(&upd.Status.Conditions, cond) // keeps the transition time if Status is unchanged
	_, err := c.cfg.Client.ConfigV1alpha1().WatchRules(rule.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	switch {
	case err == nil:
		c.written[writtenKeyOf(rule)] = writtenStatus{status: st, baseRV: rule.ResourceVersion}
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		c.log.V(2).Info("WatchRule status conflict, retrying on the next reconcile", "watchRule", rule.Namespace+"/"+rule.Name)
	default:
		c.log.Error(err, "updating WatchRule status", "watchRule", rule.Namespace+"/"+rule.Name)
	}
}
