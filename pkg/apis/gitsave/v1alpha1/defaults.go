package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_CommitRequestSpec closes the window as soon as the request is received
// unless the client asks for a collect-grace.
func SetDefaults_CommitRequestSpec(obj *CommitRequestSpec) {
	if obj.CloseDelaySeconds == nil {
		var zero int32
		obj.CloseDelaySeconds = &zero
	}
}
