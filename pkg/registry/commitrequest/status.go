package commitrequest

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/save"
)

// outcome classifies a progress reason into the kstatus picture.
type outcome int

const (
	inProgress outcome = iota // Reconciling=True, Ready=False
	succeeded                 // Ready=True
	failed                    // Ready=False, Stalled=True
)

var reasonOutcome = map[string]outcome{
	v1alpha1.ReasonWaitingForEdits:      inProgress,
	v1alpha1.ReasonWaitingForWindow:     inProgress,
	v1alpha1.ReasonWaitingForCloseDelay: inProgress,
	v1alpha1.ReasonAwaitingPush:         inProgress,
	v1alpha1.ReasonCommitted:            succeeded,
	v1alpha1.ReasonNoWindowInGrace:      succeeded,
	v1alpha1.ReasonWindowMismatch:       succeeded,
	v1alpha1.ReasonAlreadyPresent:       succeeded,
	v1alpha1.ReasonCommitFailed:         failed,
	v1alpha1.ReasonPushFailed:           failed,
	v1alpha1.ReasonTargetDeleted:        failed,
	v1alpha1.ReasonWorkerStopped:        failed,
}

// defaultMessages explain a reason when the worker gives no detail.
var defaultMessages = map[string]string{
	v1alpha1.ReasonWaitingForEdits:      "waiting for edits admitted before the request to be observed",
	v1alpha1.ReasonWaitingForWindow:     "waiting for an open commit window of the author on the target",
	v1alpha1.ReasonWaitingForCloseDelay: "attached to the author's open window; collecting edits until the close delay ends",
	v1alpha1.ReasonAwaitingPush:         "committed; waiting for the push to the remote",
	v1alpha1.ReasonCommitted:            "committed and pushed",
	v1alpha1.ReasonNoWindowInGrace:      "nothing to save: no edits of the author on the target before the close delay ended",
	v1alpha1.ReasonWindowMismatch:       "nothing to save: the open window belongs to another author or target and was left untouched",
	v1alpha1.ReasonAlreadyPresent:       "nothing to save: the edits already match the repository",
	v1alpha1.ReasonCommitFailed:         "the commit could not be written",
	v1alpha1.ReasonPushFailed:           "the commit could not be pushed",
	v1alpha1.ReasonTargetDeleted:        "the GitTarget was deleted",
	v1alpha1.ReasonWorkerStopped:        "the branch worker stopped before the request was resolved",
}

// Report records a worker's progress on a request; every change is a MODIFIED watch
// event. It implements save.Reporter.
func (r *REST) Report(uid types.UID, p save.Progress) {
	now := r.clock.Now()
	r.store.mutateByUID(uid, func(cr *gitsave.CommitRequest) (bool, bool) {
		if isResolved(cr) {
			// An outcome is final: a late report (a replayed write) cannot undo it.
			return false, true
		}
		before := cr.Status.DeepCopy()
		applyProgress(cr, p, metav1.NewTime(now.Truncate(time.Second)))
		return !equality.Semantic.DeepEqual(before, &cr.Status), reasonOutcome[p.Reason] != inProgress
	}, now)
}

// applyProgress writes p into the status conditions and result fields.
func applyProgress(cr *gitsave.CommitRequest, p save.Progress, now metav1.Time) {
	msg := p.Message
	if msg == "" {
		msg = defaultMessages[p.Reason]
	}
	if msg == "" {
		msg = fmt.Sprintf("worker reported %s", p.Reason)
	}
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: message,
			ObservedGeneration: cr.Generation, LastTransitionTime: now,
		})
	}
	st := &cr.Status
	if p.Branch != "" {
		st.Branch = p.Branch
	}
	if p.FinalizedBy != "" {
		st.FinalizedBy = p.FinalizedBy
	}
	if p.FilesChanged > 0 {
		st.FilesChanged = int32(p.FilesChanged)
	}
	if p.SHA != "" {
		st.SHA = p.SHA
	}

	switch reasonOutcome[p.Reason] {
	case inProgress:
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, p.Reason, msg)
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, p.Reason, msg)
	case succeeded:
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
		set(v1alpha1.ConditionReady, metav1.ConditionTrue, p.Reason, msg)
		if p.Reason == v1alpha1.ReasonCommitted {
			set(v1alpha1.ConditionPushed, metav1.ConditionTrue, v1alpha1.ReasonPushed,
				fmt.Sprintf("%s is on branch %s of the remote", p.SHA, p.Branch))
		}
	case failed:
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, p.Reason, msg)
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, p.Reason, msg)
	}
}

// isResolved says whether the request has reached its outcome.
func isResolved(cr *gitsave.CommitRequest) bool {
	ready := meta.FindStatusCondition(cr.Status.Conditions, v1alpha1.ConditionReady)
	return ready != nil && reasonOutcome[ready.Reason] != inProgress
}

// initialProgress is what a request shows until its worker reports.
func initialProgress(haveWorker bool) save.Progress {
	if haveWorker {
		return save.Progress{Reason: v1alpha1.ReasonWaitingForWindow, Message: "handed to the branch worker"}
	}
	return save.Progress{Reason: v1alpha1.ReasonWaitingForWindow,
		Message: "no branch worker runs in this server: the request stays pending"}
}
