package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the object.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Identity is a Git signature.
type Identity struct {
	// name shown in Git.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// email shown in Git.
	// +kubebuilder:validation:MinLength=1
	Email string `json:"email"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=gitsave
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// GitProvider says where and how gitsave pushes: a remote repository and its
// credentials.
type GitProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GitProviderSpec `json:"spec"`
	// +optional
	Status GitProviderStatus `json:"status,omitempty"`
}

// GitProviderSpec is a remote repository and how to authenticate to it.
type GitProviderSpec struct {
	// url of the repository: https://, http://, ssh://, user@host:path, or file://.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self.matches('^(https?|ssh|file)://.+') || self.matches('^[^@/:]+@[^:/]+:.+')",message="url must be https://, http://, ssh://, file:// or user@host:path"
	URL string `json:"url"`
	// secretRef names a Secret in the same namespace with the credentials: username and
	// password, or token, or ssh-privatekey with known_hosts.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// committer is the identity that commits (authors are the people who made the edits).
	// +optional
	// +kubebuilder:default={name: "gitsave", email: "gitsave@noreply.gitsave.dev"}
	Committer *Identity `json:"committer,omitempty"`
	// authorEmailTemplate makes an author's email from the username; {username} is
	// replaced.
	// +optional
	// +kubebuilder:default="{username}@users.noreply.gitsave.dev"
	// +kubebuilder:validation:XValidation:rule="self.contains('{username}')",message="must contain {username}"
	AuthorEmailTemplate string `json:"authorEmailTemplate,omitempty"`
}

// GitProviderStatus reports whether the remote can be reached with the credentials.
type GitProviderStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready, with a reason a person can act on.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// GitProviderList is a list of GitProviders.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type GitProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitProvider `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=gitsave
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerRef.name`
// +kubebuilder:printcolumn:name="Branch",type=string,JSONPath=`.spec.branch`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.path`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last-Pushed",type=string,JSONPath=`.status.lastPushedSHA`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.status.openWindowAuthor`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// GitTarget is a folder on a branch of a GitProvider's repository that mirrored objects
// are written into.
type GitTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GitTargetSpec `json:"spec"`
	// +optional
	Status GitTargetStatus `json:"status,omitempty"`
}

// GitTargetSpec is a folder on a branch and how edits are grouped into commits.
type GitTargetSpec struct {
	// providerRef names the GitProvider in the same namespace.
	ProviderRef LocalObjectReference `json:"providerRef"`
	// branch to commit to.
	// +optional
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._/-]+$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.endsWith('/') && !self.endsWith('.lock') && !self.contains('..') && !self.contains('//')",message="must be a valid Git branch name"
	Branch string `json:"branch,omitempty"`
	// path is the folder inside the repository, "" for the root.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="must be a relative path without '..'"
	Path string `json:"path,omitempty"`
	// commitWindow is how long an author's edits may pause before they are committed
	// without a Save.
	// +optional
	// +kubebuilder:default="1m"
	CommitWindow metav1.Duration `json:"commitWindow,omitempty"`
	// maxWindowEvents commits an open window once it holds this many edits.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	MaxWindowEvents int32 `json:"maxWindowEvents,omitempty"`
}

// GitTargetStatus reports the target's push state.
type GitTargetStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready, with a reason a person can act on.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// lastPushedSHA is the branch head gitsave last pushed.
	// +optional
	LastPushedSHA string `json:"lastPushedSHA,omitempty"`
	// unpushedWrites counts commits made but not yet on the remote.
	// +optional
	UnpushedWrites int32 `json:"unpushedWrites,omitempty"`
	// openWindowAuthor is the author whose edits are collecting, if any.
	// +optional
	OpenWindowAuthor string `json:"openWindowAuthor,omitempty"`
}

// +kubebuilder:object:root=true

// GitTargetList is a list of GitTargets.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type GitTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitTarget `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=gitsave
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WatchRule says which resources of its namespace are mirrored into a GitTarget.
type WatchRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WatchRuleSpec `json:"spec"`
	// +optional
	Status WatchRuleStatus `json:"status,omitempty"`
}

// WatchRuleSpec selects resources to mirror.
type WatchRuleSpec struct {
	// targetRef names the GitTarget in the same namespace.
	TargetRef LocalObjectReference `json:"targetRef"`
	// rules select resources by API group and plural resource name.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Rules []ResourceRule `json:"rules"`
}

// ResourceRule selects resources as RBAC rules do.
type ResourceRule struct {
	// apiGroups, "" for the core group.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	APIGroups []string `json:"apiGroups"`
	// resources: plural names, e.g. configmaps, deployments.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Resources []string `json:"resources"`
}

// WatchRuleStatus reports what the rule resolved to.
type WatchRuleStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready, with a reason such as an unknown resource or skipped Secrets.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// watching lists the resources being mirrored, as resource.group.
	// +optional
	// +listType=atomic
	Watching []string `json:"watching,omitempty"`
}

// +kubebuilder:object:root=true

// WatchRuleList is a list of WatchRules.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WatchRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WatchRule `json:"items"`
}
