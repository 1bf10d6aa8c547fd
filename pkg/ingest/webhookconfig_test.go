package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func serviceClientConfig(ca string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "gitsave-system", Name: "gitsave", Path: ptr.To("/admission/attribution")},
		CABundle: []byte(ca),
	}
}

func getWebhookConfig(t *testing.T, kube *kubefake.Clientset) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	cfg, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), DefaultWebhookConfigurationName, metav1.GetOptions{})
	require.NoError(t, err)
	return cfg
}

// runReconciler runs r until the test ends (cancel, then wait for Run to return).
func runReconciler(t *testing.T, ctx context.Context, cancel context.CancelFunc, r *WebhookConfigReconciler, src WatchSource) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, src)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func writes(kube *kubefake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			n++
		}
	}
	return n
}

func TestWebhookConfigurationRulesFollowTheWatchedResources(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	r := &WebhookConfigReconciler{Client: kube, ClientConfig: serviceClientConfig("CA")}

	require.NoError(t, r.Reconcile(ctx, []schema.GroupVersionResource{deployGVR, cmGVR}, []string{"demo", "apps"}))
	cfg := getWebhookConfig(t, kube)
	require.Len(t, cfg.Webhooks, 1)
	wh := cfg.Webhooks[0]
	assert.Equal(t, WebhookName, wh.Name)
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	namespaced := ptr.To(admissionregistrationv1.NamespacedScope)
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{
		{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
			Resources: []string{"deployments", "deployments/scale"}, Scope: namespaced}},
		{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
			Resources: []string{"configmaps"}, Scope: namespaced}},
	}, wh.Rules)
	assert.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"apps", "demo"},
	}}}, wh.NamespaceSelector)
	assert.Equal(t, admissionregistrationv1.Ignore, *wh.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNoneOnDryRun, *wh.SideEffects)
	assert.Equal(t, admissionregistrationv1.Equivalent, *wh.MatchPolicy)
	assert.Equal(t, int32(2), *wh.TimeoutSeconds)
	assert.Equal(t, []string{"v1"}, wh.AdmissionReviewVersions)
	assert.Equal(t, int32(443), *wh.ClientConfig.Service.Port)
	assert.Equal(t, []byte("CA"), wh.ClientConfig.CABundle)

	// Unchanged: nothing is written.
	n := writes(kube)
	require.NoError(t, r.Reconcile(ctx, []schema.GroupVersionResource{cmGVR, deployGVR}, []string{"apps", "demo"}))
	assert.Equal(t, n, writes(kube))

	// Nothing watched: the configuration stays, with no webhook.
	require.NoError(t, r.Reconcile(ctx, nil, nil))
	assert.Empty(t, getWebhookConfig(t, kube).Webhooks)
	assert.Equal(t, n+1, writes(kube))
}

func TestWebhookConfigurationKeepsAnInjectedCABundle(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	injected := &WebhookConfigReconciler{Client: kube, ClientConfig: serviceClientConfig("INJECTED")}
	require.NoError(t, injected.Reconcile(ctx, []schema.GroupVersionResource{cmGVR}, []string{"demo"}))

	r := &WebhookConfigReconciler{Client: kube, ClientConfig: serviceClientConfig("")}
	n := writes(kube)
	require.NoError(t, r.Reconcile(ctx, []schema.GroupVersionResource{cmGVR}, []string{"demo"}))
	assert.Equal(t, n, writes(kube), "an empty CABundle does not count as a change")
	require.NoError(t, r.Reconcile(ctx, []schema.GroupVersionResource{cmGVR, deployGVR}, []string{"demo"}))
	assert.Equal(t, []byte("INJECTED"), getWebhookConfig(t, kube).Webhooks[0].ClientConfig.CABundle)
}

func TestWebhookConfigurationFollowsTheController(t *testing.T) {
	e := newEnv(t)
	kube := kubefake.NewClientset()
	r := &WebhookConfigReconciler{Client: kube, ClientConfig: serviceClientConfig("CA"), Clock: e.clock}
	runReconciler(t, e.ctx, e.cancel, r, e.ctrl)

	resources := func() []string {
		cfg, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(e.ctx, DefaultWebhookConfigurationName, metav1.GetOptions{})
		if err != nil || len(cfg.Webhooks) == 0 {
			return nil
		}
		var out []string
		for _, rule := range cfg.Webhooks[0].Rules {
			out = append(out, rule.Resources...)
		}
		return out
	}

	e.addTarget(ns, "dev", "")
	e.addRule(watchRule(ns, "mirror", "dev", rr([]string{""}, "configmaps")))
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{"configmaps"}, resources()) }, wait, tick)

	e.updateRuleSpec(ns, "mirror", rr(coreAndApps, "configmaps", "deployments"))
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual([]string{"deployments", "deployments/scale", "configmaps"}, resources())
	}, wait, tick)
}

// Someone else's edit or delete of the configuration is undone.
func TestWebhookConfigurationHealsItself(t *testing.T) {
	e := newEnv(t)
	stale := DesiredWebhookConfiguration(DefaultWebhookConfigurationName, serviceClientConfig("CA"), []schema.GroupVersionResource{deployGVR}, []string{"old"})
	kube := kubefake.NewClientset(stale)
	api := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	r := &WebhookConfigReconciler{Client: kube, ClientConfig: serviceClientConfig("CA"), Clock: e.clock}
	runReconciler(t, e.ctx, e.cancel, r, e.ctrl)

	e.addTarget(ns, "dev", "")
	e.addRule(watchRule(ns, "mirror", "dev", rr([]string{""}, "configmaps")))
	namespaces := func() []string {
		cfg, err := api.Get(e.ctx, DefaultWebhookConfigurationName, metav1.GetOptions{})
		if err != nil || len(cfg.Webhooks) == 0 {
			return nil
		}
		return cfg.Webhooks[0].NamespaceSelector.MatchExpressions[0].Values
	}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{ns}, namespaces()) }, wait, tick)

	require.NoError(t, api.Delete(e.ctx, DefaultWebhookConfigurationName, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{ns}, namespaces()) }, wait, tick, "recreated")

	cfg, err := api.Get(e.ctx, DefaultWebhookConfigurationName, metav1.GetOptions{})
	require.NoError(t, err)
	cfg.Webhooks[0].NamespaceSelector.MatchExpressions[0].Values = []string{"elsewhere"}
	_, err = api.Update(e.ctx, cfg, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{ns}, namespaces()) }, wait, tick, "restored")
	n := writes(kube)
	require.Never(t, func() bool { return writes(kube) > n }, 300*time.Millisecond, tick, "its own writes do not loop")
}

// silentSource has not yet said what is watched.
type silentSource struct{}

func (silentSource) WatchedResources() []schema.GroupVersionResource { return nil }
func (silentSource) WatchedNamespaces() []string                     { return nil }
func (silentSource) WatchChanged() <-chan struct{}                   { return nil }

// Until the controller has said what is watched, a change to the configuration
// writes nothing: a restarting gitsave must not empty it meanwhile.
func TestWebhookConfigurationWaitsForTheWatchedSet(t *testing.T) {
	stale := DesiredWebhookConfiguration(DefaultWebhookConfigurationName, serviceClientConfig("CA"), []schema.GroupVersionResource{deployGVR}, []string{"demo"})
	kube := kubefake.NewClientset(stale)
	ctx, cancel := context.WithCancel(context.Background())
	runReconciler(t, ctx, cancel, &WebhookConfigReconciler{Client: kube, ClientConfig: serviceClientConfig("CA")}, silentSource{})
	require.Eventually(t, func() bool {
		for _, a := range kube.Actions() {
			if a.GetVerb() == "watch" {
				return true
			}
		}
		return false
	}, wait, tick, "the configuration is watched")
	require.NoError(t, kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, DefaultWebhookConfigurationName, metav1.DeleteOptions{}))
	require.Never(t, func() bool { return writes(kube) > 0 }, 300*time.Millisecond, tick)
}
