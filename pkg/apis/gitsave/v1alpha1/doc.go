// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/gitsave/gitsave/pkg/apis/gitsave
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-model-package=dev.gitsave.v1alpha1
// +groupName=gitsave.dev

// Package v1alpha1 is the v1alpha1 version of the gitsave.dev API: the Save API.
package v1alpha1
