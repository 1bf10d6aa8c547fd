package validation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
)

func request(mutate func(*gitsave.CommitRequestSpec)) *gitsave.CommitRequest {
	cr := &gitsave.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "save", Namespace: "demo"},
		Spec:       gitsave.CommitRequestSpec{TargetRef: gitsave.TargetReference{Name: "dev"}, Message: "Scale web"},
	}
	mutate(&cr.Spec)
	return cr
}

func TestValidateCommitRequest(t *testing.T) {
	cases := []struct {
		name  string
		spec  func(*gitsave.CommitRequestSpec)
		field string
		typ   field.ErrorType
	}{
		{"valid", func(*gitsave.CommitRequestSpec) {}, "", ""},
		{"empty message uses the generated one", func(s *gitsave.CommitRequestSpec) { s.Message = "" }, "", ""},
		{"newlines allowed", func(s *gitsave.CommitRequestSpec) { s.Message = "Subject\n\nBody\n" }, "", ""},
		{"1024 multi-byte runes", func(s *gitsave.CommitRequestSpec) { s.Message = strings.Repeat("é", 1024) }, "", ""},
		{"1025 runes", func(s *gitsave.CommitRequestSpec) { s.Message = strings.Repeat("a", 1025) }, "spec.message", field.ErrorTypeTooLong},
		{"tab", func(s *gitsave.CommitRequestSpec) { s.Message = "a\tb" }, "spec.message", field.ErrorTypeInvalid},
		{"carriage return", func(s *gitsave.CommitRequestSpec) { s.Message = "a\r\nb" }, "spec.message", field.ErrorTypeInvalid},
		{"C1 control", func(s *gitsave.CommitRequestSpec) { s.Message = "a\u0085b" }, "spec.message", field.ErrorTypeInvalid},
		{"invalid UTF-8", func(s *gitsave.CommitRequestSpec) { s.Message = "a\xffb" }, "spec.message", field.ErrorTypeInvalid},
		{"missing target", func(s *gitsave.CommitRequestSpec) { s.TargetRef.Name = "" }, "spec.targetRef.name", field.ErrorTypeRequired},
		{"bad target name", func(s *gitsave.CommitRequestSpec) { s.TargetRef.Name = "Not_A_Name" }, "spec.targetRef.name", field.ErrorTypeInvalid},
		{"delay -1", func(s *gitsave.CommitRequestSpec) { s.CloseDelaySeconds = -1 }, "spec.closeDelaySeconds", field.ErrorTypeInvalid},
		{"delay 301", func(s *gitsave.CommitRequestSpec) { s.CloseDelaySeconds = 301 }, "spec.closeDelaySeconds", field.ErrorTypeInvalid},
		{"delay 300", func(s *gitsave.CommitRequestSpec) { s.CloseDelaySeconds = 300 }, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateCommitRequest(request(tc.spec))
			if tc.field == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, errs.ToAggregate())
			assert.Equal(t, tc.field, errs[0].Field)
			assert.Equal(t, tc.typ, errs[0].Type)
		})
	}
}

func TestValidateCommitRequestUpdate(t *testing.T) {
	old := request(func(*gitsave.CommitRequestSpec) {})
	old.ResourceVersion = "1"

	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"team": "web"}
	assert.Empty(t, ValidateCommitRequestUpdate(relabelled, old))

	changed := old.DeepCopy()
	changed.Spec.Message = "another"
	errs := ValidateCommitRequestUpdate(changed, old)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "immutable")
}
