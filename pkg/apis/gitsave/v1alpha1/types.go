package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CommitRequest is a Save: it asks gitsave to commit the requesting user's open
// commit window on a GitTarget with the given message, push it, and report the pushed
// SHA. The author is taken from the authenticated request, never from the body.
type CommitRequest struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which GitTarget to save and with which message. Immutable.
	Spec CommitRequestSpec `json:"spec"`
	// status reports progress and outcome. Owned by the server: anything a client
	// sends here is ignored.
	// +optional
	Status CommitRequestStatus `json:"status,omitempty"`
}

// CommitRequestSpec says what to save. It cannot be changed after creation.
type CommitRequestSpec struct {
	// targetRef names the GitTarget, in the same namespace, whose open window of the
	// requesting user is committed.
	TargetRef TargetReference `json:"targetRef"`
	// message is the commit message, used verbatim: 1 to 1024 characters; newlines are
	// allowed, other control characters are not. Empty means the generated message.
	// +optional
	Message string `json:"message,omitempty"`
	// closeDelaySeconds keeps the window open this long after the request is received,
	// so that edits sent together with it (a kubectl apply bundle) join the same
	// commit. 0 to 300, default 0.
	// +optional
	// +default=0
	CloseDelaySeconds *int32 `json:"closeDelaySeconds,omitempty"`
}

// TargetReference names a GitTarget in the same namespace.
type TargetReference struct {
	// name of the GitTarget.
	Name string `json:"name"`
}

// CommitRequestStatus reports a CommitRequest's progress through kstatus-compatible
// conditions (Attributed, Reconciling, Ready, Stalled, Pushed) and its result.
type CommitRequestStatus struct {
	// author is the authenticated user who created the request.
	// +optional
	Author *Author `json:"author,omitempty"`
	// conditions: Attributed, Reconciling, Ready (the summary), Stalled and Pushed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// branch the commit was pushed to.
	// +optional
	Branch string `json:"branch,omitempty"`
	// sha of this request's own commit as it is on the remote (after any replay).
	// +optional
	SHA string `json:"sha,omitempty"`
	// finalizedBy says which path closed the window: CloseDelay, SilenceTimer,
	// AuthorSwitch, BufferLimit, Resync or Shutdown.
	// +optional
	FinalizedBy string `json:"finalizedBy,omitempty"`
	// filesChanged is the number of files the commit changed.
	// +optional
	FilesChanged int32 `json:"filesChanged,omitempty"`
}

// Author is the user a request was authenticated as.
type Author struct {
	// username as authenticated by the Kubernetes API server.
	Username string `json:"username"`
	// uid of the user, when the authenticator provides one.
	// +optional
	UID string `json:"uid,omitempty"`
	// groups of the user.
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CommitRequestList is a list of CommitRequests.
type CommitRequestList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []CommitRequest `json:"items"`
}
