// +k8s:deepcopy-gen=package
// +groupName=gitsave.dev

// Package gitsave is the internal version of the gitsave.dev API: the types the
// registry and the worker work with. Clients use v1alpha1.
package gitsave
