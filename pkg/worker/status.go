package worker

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
)

// Reasons of the Ready condition of GitTargets and GitProviders.
const (
	ConditionReady          = "Ready"
	ReasonReady             = "Ready"
	ReasonConnecting        = "Connecting"
	ReasonRemoteUnreachable = "RemoteUnreachable"
	ReasonAuthDenied        = "AuthDenied"
	ReasonProviderNotFound  = "ProviderNotFound"
	ReasonNotInUse          = "NotInUse"
)

// StatusWriter copies the workers' state into GitTarget and GitProvider
// status: a Ready condition with an actionable reason, and for targets the
// last pushed SHA, unpushed writes and the open window's author. It writes
// only what changed.
type StatusWriter struct {
	Client  versioned.Interface
	Manager *Manager
	// Interval between passes (default 5s).
	Interval time.Duration
	Clock    clock.Clock
}

// Run writes status every Interval until ctx ends.
func (s *StatusWriter) Run(ctx context.Context) {
	c, every := s.Clock, s.Interval
	if c == nil {
		c = clock.RealClock{}
	}
	if every <= 0 {
		every = 5 * time.Second
	}
	for {
		if err := s.SyncOnce(ctx); err != nil {
			s.Manager.log.Error(err, "write status")
		}
		select {
		case <-ctx.Done():
			return
		case <-c.After(every):
		}
	}
}

// SyncOnce writes the status of every GitTarget and GitProvider in the
// caches whose status changed.
func (s *StatusWriter) SyncOnce(ctx context.Context) error {
	var errs []error
	targets, err := s.Manager.cfg.Targets.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	for _, t := range targets {
		st := targetStatus(t, s.Manager.TargetState(t.Namespace+"/"+t.Name))
		if equality.Semantic.DeepEqual(st, t.Status) {
			continue
		}
		c := t.DeepCopy()
		c.Status = st
		if _, err := s.Client.ConfigV1alpha1().GitTargets(t.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	providers, err := s.Manager.cfg.Providers.Lister().List(labels.Everything())
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, p := range providers {
		st := providerStatus(p, s.Manager.ProviderSnapshots(p.Namespace+"/"+p.Name))
		if equality.Semantic.DeepEqual(st, p.Status) {
			continue
		}
		c := p.DeepCopy()
		c.Status = st
		if _, err := s.Client.ConfigV1alpha1().GitProviders(p.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func targetStatus(t *configv1alpha1.GitTarget, state TargetState) configv1alpha1.GitTargetStatus {
	st := *t.Status.DeepCopy()
	st.ObservedGeneration = t.Generation
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: t.Generation}
	switch {
	case state.Served:
		snap := state.Snapshot
		cond.Status, cond.Reason, cond.Message = healthCondition(snap)
		if snap.LastPushedSHA != "" {
			st.LastPushedSHA = snap.LastPushedSHA
		}
		st.UnpushedWrites = int32(snap.Unpushed(t.Namespace + "/" + t.Name))
		st.OpenWindowAuthor = ""
		if snap.OpenWindowTarget == t.Namespace+"/"+t.Name {
			st.OpenWindowAuthor = snap.OpenWindowAuthor
		}
	case state.Known:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, state.Problem.Reason, state.Problem.Message
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, ReasonConnecting, "not served yet"
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

func providerStatus(p *configv1alpha1.GitProvider, snaps []Snapshot) configv1alpha1.GitProviderStatus {
	st := *p.Status.DeepCopy()
	st.ObservedGeneration = p.Generation
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: p.Generation,
		Status: metav1.ConditionUnknown, Reason: ReasonNotInUse, Message: "no GitTarget uses this provider"}
	// The worst worker decides: auth denied, then unreachable, then connecting.
	rank := map[RemoteHealth]int{RemoteOK: 1, RemoteConnecting: 2, RemoteUnreachable: 3, RemoteAuthDenied: 4}
	worst := -1
	for i, s := range snaps {
		if worst < 0 || rank[s.Health] > rank[snaps[worst].Health] {
			worst = i
		}
	}
	if worst >= 0 {
		cond.Status, cond.Reason, cond.Message = healthCondition(snaps[worst])
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

func healthCondition(s Snapshot) (metav1.ConditionStatus, string, string) {
	switch s.Health {
	case RemoteOK:
		return metav1.ConditionTrue, ReasonReady, "pushing to " + s.Branch
	case RemoteAuthDenied:
		return metav1.ConditionFalse, ReasonAuthDenied, s.LastPushError
	case RemoteUnreachable:
		return metav1.ConditionFalse, ReasonRemoteUnreachable, s.LastPushError
	default:
		return metav1.ConditionUnknown, ReasonConnecting, "opening " + s.URL
	}
}
