package gitsave

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CommitRequest asks gitsave to commit the requesting user's open window on a
// GitTarget with a message, push it, and report the pushed SHA.
type CommitRequest struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   CommitRequestSpec
	Status CommitRequestStatus
}

// CommitRequestSpec is immutable once created.
type CommitRequestSpec struct {
	TargetRef         TargetReference
	Message           string
	CloseDelaySeconds int32
}

// TargetReference names a GitTarget in the CommitRequest's namespace.
type TargetReference struct {
	Name string
}

// CommitRequestStatus is owned by the server.
type CommitRequestStatus struct {
	Author       *Author
	Conditions   []metav1.Condition
	Branch       string
	SHA          string
	FinalizedBy  string
	FilesChanged int32
}

// Author is the authenticated user who created the request.
type Author struct {
	Username string
	UID      string
	Groups   []string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CommitRequestList is a list of CommitRequests.
type CommitRequestList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []CommitRequest
}
