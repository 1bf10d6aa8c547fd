package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by gitsave-apiserver.
const GroupName = "gitsave.dev"

// SchemeGroupVersion is the group version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	AddToScheme        = localSchemeBuilder.AddToScheme
)

func init() {
	// Generated functions (conversion, defaults) register themselves in their own
	// files; only hand-written registrations go here.
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs, addFieldLabelConversions)
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &CommitRequest{}, &CommitRequestList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// Field selectors a client may use on commitrequests besides metadata.name and
// metadata.namespace.
const (
	FieldTargetName     = "spec.targetRef.name"
	FieldAuthorUsername = "status.author.username"
)

func addFieldLabelConversions(scheme *runtime.Scheme) error {
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("CommitRequest"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace", FieldTargetName, FieldAuthorUsername:
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported for CommitRequest: %s", label)
		})
}
