package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/gitsave/gitsave/pkg/apiserver"
	"github.com/gitsave/gitsave/pkg/save"
)

func review(user string) []byte {
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("req-1"),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Namespace: "demo", Name: "web", Operation: admissionv1.Delete,
			UserInfo: authenticationv1.UserInfo{Username: user},
		},
	}
	b, _ := json.Marshal(r)
	return b
}

// The webhook path is behind authentication and authorization: an anonymous caller
// cannot plant facts that would misattribute someone's edits.
func TestAttributionWebhookNeedsAnAuthorizedCaller(t *testing.T) {
	e := startServer(t, nil)
	url := e.Loopback.Host + apiserver.AttributionWebhookPath
	pending := func() []save.EditKey {
		return e.Attribution.Pending("mallory", func(save.EditKey) bool { return true })
	}

	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := anon.Post(url, "application/json", bytes.NewReader(review("mallory")))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "anonymous callers are refused")
	assert.Empty(t, pending(), "a refused call records nothing")

	// An authorized caller (the kube-apiserver's identity in a cluster) is heard.
	client, err := rest.UnversionedRESTClientFor(withJSON(e.As("kube-apiserver-webhook-client")))
	require.NoError(t, err)
	body, err := client.Post().AbsPath(apiserver.AttributionWebhookPath).SetHeader("Content-Type", "application/json").
		Body(review("mallory")).DoRaw(context.Background())
	require.NoError(t, err, string(body))
	var answer admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(body, &answer))
	assert.True(t, answer.Response.Allowed)
	assert.Equal(t, []save.EditKey{{Resource: "configmaps", Namespace: "demo", Name: "web"}}, pending())
}
