// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.gitsave.config.v1alpha1
// +groupName=config.gitsave.dev
// +kubebuilder:object:generate=false

// Package v1alpha1 holds gitsave's configuration, served as CustomResourceDefinitions:
// GitProvider (where and how to push), GitTarget (a folder on a branch) and WatchRule
// (what to mirror into a target).
package v1alpha1
