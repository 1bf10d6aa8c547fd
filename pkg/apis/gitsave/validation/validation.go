// Package validation checks CommitRequests: the rules a client is told about with a
// 422 naming the field.
package validation

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
)

// Limits of a CommitRequest spec.
const (
	MaxMessageRunes      = 1024
	MaxCloseDelaySeconds = 300
)

// ValidateCommitRequest checks a new CommitRequest.
func ValidateCommitRequest(cr *gitsave.CommitRequest) field.ErrorList {
	return ValidateCommitRequestSpec(&cr.Spec, field.NewPath("spec"))
}

// ValidateCommitRequestSpec checks the spec's fields.
func ValidateCommitRequestSpec(spec *gitsave.CommitRequestSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	target := p.Child("targetRef", "name")
	if spec.TargetRef.Name == "" {
		errs = append(errs, field.Required(target, "the GitTarget to save"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.TargetRef.Name, false) {
			errs = append(errs, field.Invalid(target, spec.TargetRef.Name, msg))
		}
	}
	errs = append(errs, validateMessage(spec.Message, p.Child("message"))...)
	if d := spec.CloseDelaySeconds; d < 0 || d > MaxCloseDelaySeconds {
		errs = append(errs, field.Invalid(p.Child("closeDelaySeconds"), d,
			fmt.Sprintf("must be between 0 and %d", MaxCloseDelaySeconds)))
	}
	return errs
}

// validateMessage allows an empty message (the generated one is used), else 1–1024
// runes of valid UTF-8 with no control characters but newline.
func validateMessage(msg string, p *field.Path) field.ErrorList {
	if msg == "" {
		return nil
	}
	if !utf8.ValidString(msg) {
		return field.ErrorList{field.Invalid(p, "<invalid UTF-8>", "must be valid UTF-8")}
	}
	if n := utf8.RuneCountInString(msg); n > MaxMessageRunes {
		return field.ErrorList{field.TooLong(p, "", MaxMessageRunes).WithOrigin("maxLength")}
	}
	for i, r := range msg {
		if r != '\n' && unicode.IsControl(r) {
			return field.ErrorList{field.Invalid(p, shorten(msg),
				fmt.Sprintf("must not contain control characters other than newline (found %U at byte %d)", r, i))}
		}
	}
	return nil
}

// ValidateCommitRequestUpdate refuses any change to the spec.
func ValidateCommitRequestUpdate(newCR, oldCR *gitsave.CommitRequest) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&newCR.ObjectMeta, &oldCR.ObjectMeta, field.NewPath("metadata"))
	if !apiequality.Semantic.DeepEqual(newCR.Spec, oldCR.Spec) {
		errs = append(errs, field.Invalid(field.NewPath("spec"), "", apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

func shorten(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + "…"
}
