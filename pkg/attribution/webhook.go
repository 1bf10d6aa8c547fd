package attribution

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsave/gitsave/pkg/ingest/sanitize"
	"github.com/gitsave/gitsave/pkg/save"
)

// MaxReviewBytes bounds a request body: an AdmissionReview carries up to two objects
// of at most ~1.5 MiB each in storage, larger as JSON.
const MaxReviewBytes = 16 << 20

// ContentSubresources are the subresources whose UPDATE changes the parent's mirrored
// content, so they are recorded as an UPDATE of the parent object. Everything else
// (status, eviction, binding, token, …) is ignored: status is not mirrored, and the
// others are not edits of the object's declared state.
var ContentSubresources = map[string]bool{
	"scale":               true, // spec.replicas
	"ephemeralcontainers": true, // pod spec
	"resize":              true, // pod container resources
}

// Webhook is the http.Handler of gitsave's validating admission webhook. It always
// allows; for a non-dry-run CREATE/UPDATE/DELETE it records a Fact in Index before
// answering. See the package doc for who may call it.
type Webhook struct {
	Index *Index
}

// NewWebhook returns a Webhook recording into idx.
func NewWebhook(idx *Index) *Webhook { return &Webhook{Index: idx} }

var reviewGVK = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")

func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		rw.Header().Set("Allow", http.MethodPost)
		http.Error(rw, "admission webhook: use POST", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			http.Error(rw, fmt.Sprintf("admission webhook: content type %q, want application/json", ct),
				http.StatusUnsupportedMediaType)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxReviewBytes))
	if err != nil {
		code := http.StatusBadRequest
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(rw, "admission webhook: reading body: "+err.Error(), code)
		return
	}
	req, err := decodeReview(body)
	if err != nil {
		http.Error(rw, "admission webhook: "+err.Error(), http.StatusBadRequest)
		return
	}
	f, record, err := factFor(req)
	if err != nil {
		http.Error(rw, "admission webhook: "+err.Error(), http.StatusBadRequest)
		return
	}
	if record {
		w.Index.Record(f) // before answering: the write cannot persist before this
	}

	resp := admissionv1.AdmissionReview{Response: &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}}
	resp.APIVersion, resp.Kind = reviewGVK.ToAPIVersionAndKind()
	out, err := json.Marshal(resp)
	if err != nil { // cannot happen for this struct; answer rather than panic
		http.Error(rw, "admission webhook: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(out)
}

func decodeReview(body []byte) (*admissionv1.AdmissionRequest, error) {
	if len(body) == 0 {
		return nil, errors.New("empty body, want an admission.k8s.io/v1 AdmissionReview")
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, fmt.Errorf("decoding AdmissionReview: %w", err)
	}
	if gvk := review.GroupVersionKind(); gvk != reviewGVK {
		return nil, fmt.Errorf("got apiVersion %q kind %q, want %s AdmissionReview",
			review.APIVersion, review.Kind, reviewGVK.GroupVersion())
	}
	if review.Request == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	if review.Request.UID == "" {
		return nil, errors.New("AdmissionReview request has no uid")
	}
	return review.Request, nil
}

// factFor decides whether req is an edit of mirrored content and builds its fact.
func factFor(req *admissionv1.AdmissionRequest) (Fact, bool, error) {
	if req.DryRun != nil && *req.DryRun {
		return Fact{}, false, nil
	}
	op := string(req.Operation)
	switch op {
	case OpCreate, OpUpdate, OpDelete:
	default:
		return Fact{}, false, nil // CONNECT
	}
	if sub := req.SubResource; sub != "" && !(op == OpUpdate && ContentSubresources[sub]) {
		return Fact{}, false, nil
	}
	// request.Resource is the resource the webhook registered for (after matchPolicy
	// Equivalent conversion), i.e. what the informers watch; RequestResource would be
	// the caller's spelling. A subresource request keys its parent object.
	f := Fact{
		User: save.Author{
			Username: req.UserInfo.Username,
			UID:      req.UserInfo.UID,
			Groups:   req.UserInfo.Groups,
		},
		Operation: op,
		Key: save.EditKey{
			Group:     req.Resource.Group,
			Resource:  req.Resource.Resource,
			Namespace: req.Namespace,
			Name:      req.Name,
		},
	}
	if op == OpDelete {
		return f, true, nil
	}

	obj, err := decodeObject("request.object", req.Object.Raw)
	if err != nil {
		return Fact{}, false, err
	}
	if obj == nil {
		return Fact{}, false, fmt.Errorf("request.object is empty for %s", op)
	}
	mirrored, mErr := sanitize.Marshal(obj) // an error only leaves the content unknown

	switch op {
	case OpCreate:
		// Validating admission runs after the name is generated, so the object
		// usually has its final name; keep generateName for when it does not.
		if f.Key.Name == "" {
			f.Key.Name = obj.GetName()
		}
		if f.Key.Name == "" {
			f.GenerateName = obj.GetGenerateName()
		}
	case OpUpdate:
		old, err := decodeObject("request.oldObject", req.OldObject.Raw)
		if err != nil {
			return Fact{}, false, err
		}
		// A write that leaves the mirrored file unchanged produces no event the ingest
		// matches; a fact for it would only wait to be taken by a later write's event.
		if old != nil && mErr == nil {
			if before, err := sanitize.Marshal(old); err == nil && sanitize.SameContent(before, mirrored) {
				return Fact{}, false, nil
			}
		}
	}
	if req.SubResource == "" && mErr == nil {
		f.Content = ContentOf(obj.GetAPIVersion(), mirrored)
	}
	return f, true, nil
}

func decodeObject(field string, raw []byte) (*unstructured.Unstructured, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", field, err)
	}
	return u, nil
}
