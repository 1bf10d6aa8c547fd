package attribution

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitsave/gitsave/pkg/ingest/sanitize"
	"github.com/gitsave/gitsave/pkg/save"
)

var (
	deployments = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configmaps  = metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	janeInfo    = authenticationv1.UserInfo{Username: "jane", UID: "u-jane", Groups: []string{"editors", "system:authenticated"}}
	janeAuthor  = save.Author{Username: "jane", UID: "u-jane", Groups: []string{"editors", "system:authenticated"}}
)

func deployment(name string, replicas int64, status string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "demo", "resourceVersion": "7"},
		"spec":     map[string]any{"replicas": replicas},
		"status":   map[string]any{"phase": status},
	}}
}

func raw(t *testing.T, u *unstructured.Unstructured) runtime.RawExtension {
	t.Helper()
	if u == nil {
		return runtime.RawExtension{}
	}
	b, err := u.MarshalJSON()
	require.NoError(t, err)
	return runtime.RawExtension{Raw: b}
}

func request(op admissionv1.Operation, gvr metav1.GroupVersionResource, name string) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("review-" + strings.ToLower(string(op)) + "-" + name),
		Operation: op,
		Resource:  gvr,
		Namespace: "demo",
		Name:      name,
		UserInfo:  janeInfo,
	}
}

func post(t *testing.T, h http.Handler, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/admit", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// review posts req and checks the answer allows it with the request's UID.
func review(t *testing.T, h http.Handler, req *admissionv1.AdmissionRequest) {
	t.Helper()
	in := admissionv1.AdmissionReview{Request: req}
	in.APIVersion, in.Kind = "admission.k8s.io/v1", "AdmissionReview"
	body, err := json.Marshal(in)
	require.NoError(t, err)
	w := post(t, h, body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
	assert.Equal(t, "admission.k8s.io/v1", out.APIVersion)
	assert.Equal(t, "AdmissionReview", out.Kind)
	require.NotNil(t, out.Response)
	assert.Equal(t, req.UID, out.Response.UID)
	assert.True(t, out.Response.Allowed, "the webhook always allows")
}

// only returns the single fact the index holds.
func only(t *testing.T, x *Index) Fact {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	var all []Fact
	for _, fs := range x.byKey {
		all = append(all, fs...)
	}
	require.Len(t, all, 1)
	return all[0]
}

func newWebhook() (*Webhook, *Index) {
	x, _ := newIndex(Options{})
	return NewWebhook(x), x
}

func mirrored(t *testing.T, u *unstructured.Unstructured) Content {
	t.Helper()
	b, err := sanitize.Marshal(u)
	require.NoError(t, err)
	return ContentOf(u.GetAPIVersion(), b)
}

func TestWebhookCreate(t *testing.T) {
	h, x := newWebhook()
	req := request(admissionv1.Create, deployments, "web")
	req.Object = raw(t, deployment("web", 3, ""))
	review(t, h, req)

	f := only(t, x)
	assert.Equal(t, janeAuthor, f.User)
	assert.Equal(t, OpCreate, f.Operation)
	assert.Equal(t, web, f.Key)
	assert.Equal(t, mirrored(t, deployment("web", 3, "")), f.Content)
	assert.Equal(t, t0, f.Time)
}

func TestWebhookGenerateNameCreate(t *testing.T) {
	t.Run("name not yet generated", func(t *testing.T) {
		h, x := newWebhook()
		obj := deployment("", 3, "")
		unstructured.RemoveNestedField(obj.Object, "metadata", "name")
		obj.SetGenerateName("web-")
		req := request(admissionv1.Create, deployments, "")
		req.Object = raw(t, obj)
		review(t, h, req)

		f := only(t, x)
		assert.Equal(t, withName(web, ""), f.Key)
		assert.Equal(t, "web-", f.GenerateName)
		assert.False(t, f.Content.Known(), "no name, no mirrored file yet")
		got, ok := x.Match(withName(web, "web-x7k2q"), OpCreate, time.Time{})
		require.True(t, ok)
		assert.Equal(t, janeAuthor, got)
	})
	t.Run("name generated before validation", func(t *testing.T) {
		h, x := newWebhook()
		obj := deployment("web-x7k2q", 3, "")
		obj.SetGenerateName("web-")
		req := request(admissionv1.Create, deployments, "") // request.name stays empty
		req.Object = raw(t, obj)
		review(t, h, req)

		f := only(t, x)
		assert.Equal(t, withName(web, "web-x7k2q"), f.Key)
		assert.Empty(t, f.GenerateName)
	})
}

func TestWebhookUpdate(t *testing.T) {
	h, x := newWebhook()
	req := request(admissionv1.Update, deployments, "web")
	req.OldObject = raw(t, deployment("web", 3, "ok"))
	req.Object = raw(t, deployment("web", 5, "ok"))
	review(t, h, req)

	f := only(t, x)
	assert.Equal(t, OpUpdate, f.Operation)
	assert.Equal(t, web, f.Key)
	assert.Equal(t, mirrored(t, deployment("web", 5, "")), f.Content)
}

func TestWebhookUpdateWithoutMirroredChangeIsNotRecorded(t *testing.T) {
	h, x := newWebhook()
	old := deployment("web", 3, "ok")
	obj := deployment("web", 3, "progressing") // status only
	obj.SetResourceVersion("8")
	obj.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"})
	req := request(admissionv1.Update, deployments, "web")
	req.OldObject, req.Object = raw(t, old), raw(t, obj)
	review(t, h, req)
	assert.Zero(t, x.Len())
}

func TestWebhookDelete(t *testing.T) {
	h, x := newWebhook()
	req := request(admissionv1.Delete, configmaps, "settings")
	req.OldObject = raw(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": "demo"}}})
	review(t, h, req)

	f := only(t, x)
	assert.Equal(t, OpDelete, f.Operation)
	assert.Equal(t, cm, f.Key)
	assert.False(t, f.Content.Known())
}

func TestWebhookIgnores(t *testing.T) {
	dry := true
	cases := map[string]func(*admissionv1.AdmissionRequest){
		"dry run":            func(r *admissionv1.AdmissionRequest) { r.DryRun = &dry },
		"connect":            func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Connect },
		"status":             func(r *admissionv1.AdmissionRequest) { r.SubResource = "status" },
		"subresource create": func(r *admissionv1.AdmissionRequest) { r.SubResource = "scale"; r.Operation = admissionv1.Create },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			h, x := newWebhook()
			req := request(admissionv1.Update, deployments, "web")
			req.OldObject = raw(t, deployment("web", 3, ""))
			req.Object = raw(t, deployment("web", 4, ""))
			mutate(req)
			review(t, h, req)
			assert.Zero(t, x.Len())
		})
	}
}

func TestWebhookScaleSubresource(t *testing.T) {
	scale := func(replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": "web", "namespace": "demo"},
			"spec":     map[string]any{"replicas": replicas},
			"status":   map[string]any{"replicas": int64(3)},
		}}
	}
	h, x := newWebhook()
	req := request(admissionv1.Update, deployments, "web")
	req.SubResource = "scale"
	req.OldObject, req.Object = raw(t, scale(3)), raw(t, scale(5))
	review(t, h, req)

	f := only(t, x)
	assert.Equal(t, web, f.Key, "keyed by the parent deployment")
	assert.Equal(t, OpUpdate, f.Operation)
	assert.False(t, f.Content.Known(), "a Scale is not the mirrored object")
	got, ok := x.MatchEvent(Event{Key: web, Operation: OpUpdate, Content: mirrored(t, deployment("web", 5, ""))})
	require.True(t, ok)
	assert.Equal(t, janeAuthor, got)

	// Scaling to the current size changes nothing.
	req.UID = "again"
	req.OldObject = raw(t, scale(5))
	review(t, h, req)
	assert.Zero(t, x.Len())
}

// End to end with the ingest's view: a failed write's fact does not take a later
// controller write's event, even within the TTL.
func TestWebhookFactsMatchIngestContent(t *testing.T) {
	h, x := newWebhook()
	failed := request(admissionv1.Update, deployments, "web")
	failed.OldObject, failed.Object = raw(t, deployment("web", 3, "")), raw(t, deployment("web", 9, ""))
	review(t, h, failed) // e.g. rejected by quota after this webhook: no event follows

	ctrlReq := request(admissionv1.Update, deployments, "web")
	ctrlReq.UID = "ctrl"
	ctrlReq.UserInfo = authenticationv1.UserInfo{Username: ctrl.Username}
	ctrlReq.OldObject, ctrlReq.Object = raw(t, deployment("web", 3, "")), raw(t, deployment("web", 4, ""))
	review(t, h, ctrlReq)

	got, ok := x.MatchEvent(Event{Key: web, Operation: OpUpdate, Content: mirrored(t, deployment("web", 4, "x"))})
	require.True(t, ok)
	assert.Equal(t, ctrl.Username, got.Username)
}

func TestWebhookMalformed(t *testing.T) {
	h, x := newWebhook()
	reviewJSON := func(req string) []byte {
		return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + req + `}`)
	}
	cases := map[string][]byte{
		"empty":          nil,
		"not json":       []byte("hello"),
		"truncated":      []byte(`{"apiVersion":"admission.k8s.io/v1",`),
		"wrong version":  []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"1"}}`),
		"wrong kind":     []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"Pod"}`),
		"no request":     reviewJSON(`null`),
		"no uid":         reviewJSON(`{"operation":"DELETE","name":"x"}`),
		"bad object":     reviewJSON(`{"uid":"1","operation":"CREATE","name":"x","object":{"kind":7}}`),
		"no object":      reviewJSON(`{"uid":"1","operation":"CREATE","name":"x"}`),
		"bad old object": reviewJSON(`{"uid":"1","operation":"UPDATE","name":"x","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}},"oldObject":[1]}`),
		"wrong types":    reviewJSON(`{"uid":"1","operation":"CREATE","userInfo":"jane"}`),
	}
	for name, body := range cases {
		w := post(t, h, body)
		assert.Equal(t, http.StatusBadRequest, w.Code, name)
		assert.Contains(t, w.Body.String(), "admission webhook: ", name)
	}
	assert.Zero(t, x.Len())

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/admit", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)

	r := httptest.NewRequest(http.MethodPost, "/admit", strings.NewReader("{}"))
	r.Header.Set("Content-Type", "application/yaml")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusUnsupportedMediaType, w.Code)
}

func TestWebhookBodyTooLarge(t *testing.T) {
	h, _ := newWebhook()
	big := bytes.Repeat([]byte(" "), MaxReviewBytes+1)
	w := post(t, h, big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
}
