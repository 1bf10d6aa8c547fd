package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/apiserver"
	"github.com/gitsave/gitsave/pkg/apiserver/apiservertest"
	"github.com/gitsave/gitsave/pkg/git/gittest"
	"github.com/gitsave/gitsave/pkg/save"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// mirrorEnv is the in-process server with ingest: a fake cluster (dynamic client and
// discovery) whose ConfigMaps in demo are mirrored into a bare repository over HTTP,
// and the attribution webhook called as the kube-apiserver would.
type mirrorEnv struct {
	*apiservertest.Server
	cluster *dynamicfake.FakeDynamicClient
	repo    string
	webhook *rest.RESTClient
}

func startMirror(t *testing.T) *mirrorEnv {
	t.Helper()
	remote := gittest.NewServer(t, "", "gitsave", "s3cret")
	e := &mirrorEnv{repo: remote.NewRepo(t, "demo.git")}
	configClient, kubeClient := gitConfig(remote.URL("demo.git"), &configv1alpha1.WatchRule{
		ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "demo"},
		Spec: configv1alpha1.WatchRuleSpec{TargetRef: configv1alpha1.LocalObjectReference{Name: "dev"},
			Rules: []configv1alpha1.ResourceRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}}}},
	})
	kubeClient.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap",
			Verbs: metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	}}
	e.cluster = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapsGVR: "ConfigMapList"})

	e.Server = apiservertest.Start(t, nil, func(c *apiserver.Config) {
		c.Extra.ConfigClient = configClient
		c.Extra.KubeClient = kubeClient
		c.Extra.Dynamic = e.cluster
		c.Extra.SettleTimeout = time.Second
	})
	require.NotNil(t, e.Ingest)
	var err error
	e.webhook, err = rest.UnversionedRESTClientFor(withJSON(e.As("kube-apiserver-webhook-client")))
	require.NoError(t, err)
	key := save.EditKey{Resource: "configmaps", Namespace: "demo", Name: "probe"}
	require.Eventually(t, func() bool { return e.Ingest.RoutedTo("demo", "dev")(key) && e.Workers.TargetState("demo/dev").Served },
		30*time.Second, 20*time.Millisecond, "ConfigMaps in demo are routed to a served target")
	return e
}

func configMapObject(name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": "demo"},
		"data":     map[string]interface{}{"value": value},
	}}
}

// admit is the kube-apiserver's admission call for user creating obj.
func (e *mirrorEnv) admit(t *testing.T, user string, obj *unstructured.Unstructured) {
	t.Helper()
	raw, err := json.Marshal(obj.Object)
	require.NoError(t, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("admit-" + obj.GetName()),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Namespace: "demo", Name: obj.GetName(), Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: user, Groups: []string{"editors"}},
			Object:   runtime.RawExtension{Raw: raw},
		},
	})
	require.NoError(t, err)
	out, err := e.webhook.Post().AbsPath(apiserver.AttributionWebhookPath).SetHeader("Content-Type", "application/json").
		Body(body).DoRaw(context.Background())
	require.NoError(t, err, string(out))
}

// write is the write itself reaching the cluster (and so, later, the watch).
func (e *mirrorEnv) write(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	_, err := e.cluster.Resource(configMapsGVR).Namespace("demo").Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (e *mirrorEnv) readyReason(t *testing.T, name string) string {
	cr, err := e.client(t).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	if c := meta.FindStatusCondition(cr.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

func (e *mirrorEnv) client(t *testing.T) interface {
	Get(context.Context, string, metav1.GetOptions) (*v1alpha1.CommitRequest, error)
	Create(context.Context, *v1alpha1.CommitRequest, metav1.CreateOptions) (*v1alpha1.CommitRequest, error)
} {
	return (&env{Server: e.Server}).client(t, e.As("jane", "editors")).GitsaveV1alpha1().CommitRequests("demo")
}

// An edit admitted just before the Save, whose watch event is late, is still in the
// Save's commit: the request waits for it (WaitingForEdits).
func TestSaveWaitsForEditsAdmittedBeforeIt(t *testing.T) {
	e := startMirror(t)
	a := configMapObject("a", "1")
	e.admit(t, "jane", a)
	e.write(t, a)
	require.Eventually(t, func() bool { return e.Workers.TargetState("demo/dev").Snapshot.OpenWindowAuthor == "jane" },
		30*time.Second, 20*time.Millisecond, "jane's edit opened her window")

	late := configMapObject("late", "2")
	e.admit(t, "jane", late) // admitted; its watch event has not come yet
	_, err := e.client(t).Create(context.Background(), newRequest("save", "Both edits"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.readyReason(t, "save") == v1alpha1.ReasonWaitingForEdits },
		30*time.Second, 20*time.Millisecond, "the request waits for the admitted edit")

	e.write(t, late) // the delayed event arrives
	require.Eventually(t, func() bool { return e.readyReason(t, "save") == v1alpha1.ReasonCommitted },
		30*time.Second, 20*time.Millisecond)
	log := gittest.Log(t, e.repo, "main")
	require.Len(t, log, 1)
	assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author)
	assert.ElementsMatch(t, []string{"clusters/dev/demo/configmaps/a.yaml", "clusters/dev/demo/configmaps/late.yaml"},
		gittest.Files(t, e.repo, "main"), "the late edit is in the Save's commit")
}

// A write that failed after admission never shows up: the request waits only until
// the settle timeout, then commits what there is.
func TestSaveDoesNotWaitForeverForAFailedWrite(t *testing.T) {
	e := startMirror(t)
	b := configMapObject("b", "1")
	e.admit(t, "jane", b)
	e.write(t, b)
	require.Eventually(t, func() bool { return e.Workers.TargetState("demo/dev").Snapshot.OpenWindowAuthor == "jane" },
		30*time.Second, 20*time.Millisecond)

	e.admit(t, "jane", configMapObject("failed", "x")) // admitted, then the write fails
	_, err := e.client(t).Create(context.Background(), newRequest("save", "Only b"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.readyReason(t, "save") == v1alpha1.ReasonCommitted },
		30*time.Second, 20*time.Millisecond, "released by the settle timeout")
	assert.Equal(t, []string{"clusters/dev/demo/configmaps/b.yaml"}, gittest.Files(t, e.repo, "main"))
}
