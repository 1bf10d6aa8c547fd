package ingest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Names of the admission webhook configuration.
const (
	DefaultWebhookConfigurationName = "gitsave-attribution"
	WebhookName                     = "attribution.gitsave.dev"
	// namespaceNameLabel is set by the API server on every namespace.
	namespaceNameLabel = "kubernetes.io/metadata.name"
	managedByLabel     = "app.kubernetes.io/managed-by"
	managedByValue     = "gitsave"
	webhookTimeout     = 2 // seconds; the handler does no I/O
)

// contentSubresources are the subresources whose writes change a watched
// object's mirrored content (attribution records them as an UPDATE of the
// parent, see attribution.ContentSubresources), registered when the parent is
// watched. CRDs with a scale subresource are not covered.
var contentSubresources = map[schema.GroupResource][]string{
	{Group: "apps", Resource: "deployments"}:  {"scale"},
	{Group: "apps", Resource: "statefulsets"}: {"scale"},
	{Group: "apps", Resource: "replicasets"}:  {"scale"},
	{Resource: "replicationcontrollers"}:      {"scale"},
	{Resource: "pods"}:                        {"ephemeralcontainers", "resize"},
}

// WatchSource is what the webhook configuration follows (the Controller).
type WatchSource interface {
	WatchedResources() []schema.GroupVersionResource
	WatchedNamespaces() []string
	WatchChanged() <-chan struct{}
}

// WebhookConfigReconciler keeps gitsave's ValidatingWebhookConfiguration in
// line with what is watched, so only watched types pay the admission call.
type WebhookConfigReconciler struct {
	Client kubernetes.Interface
	// Name of the configuration (default DefaultWebhookConfigurationName).
	Name string
	// ClientConfig reaches gitsave's webhook endpoint. An empty CABundle keeps
	// the one already in the cluster (injected by something else).
	ClientConfig admissionregistrationv1.WebhookClientConfig
	// Clock times retries after a failed write (default real).
	Clock clock.WithTicker
	// RetryInterval after a failed write (default 5s).
	RetryInterval time.Duration
	Logger        *logr.Logger
}

// Run reconciles whenever src's watched set changes, and whenever the
// configuration itself changes or is deleted (someone else's edit is undone,
// so writes are never left unattributed for long), retrying failed writes,
// until ctx ends. It writes nothing before src's first signal, so a restart
// does not briefly empty the configuration.
func (r *WebhookConfigReconciler) Run(ctx context.Context, src WatchSource) {
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	retry := r.RetryInterval
	if retry <= 0 {
		retry = 5 * time.Second
	}
	log := r.logger()
	drift, err := r.watchConfiguration(ctx)
	if err != nil {
		log.Error(err, "cannot watch the webhook configuration; it is kept in line with the watched set only", "name", r.name())
	}
	var retryC <-chan time.Time
	started := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-src.WatchChanged():
			started = true
		case <-drift:
			if !started {
				continue
			}
		case <-retryC:
		}
		retryC = nil
		if err := r.Reconcile(ctx, src.WatchedResources(), src.WatchedNamespaces()); err != nil {
			log.Error(err, "reconciling the webhook configuration; retrying", "name", r.name())
			retryC = clk.After(retry)
		}
	}
}

// watchConfiguration signals (coalesced) every change to the configuration,
// including gitsave's own writes, which then reconcile to no change.
func (r *WebhookConfigReconciler) watchConfiguration(ctx context.Context) (<-chan struct{}, error) {
	if r.Client == nil {
		return nil, errNoClient
	}
	name := r.name()
	factory := informers.NewSharedInformerFactoryWithOptions(r.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	changed := make(chan struct{}, 1)
	signal := func(obj any) {
		if o, err := meta.Accessor(obj); err == nil && o.GetName() != name {
			return
		}
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, err := factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer().AddEventHandler(
		cache.ResourceEventHandlerFuncs{
			AddFunc:    signal,
			UpdateFunc: func(_, obj any) { signal(obj) },
			DeleteFunc: signal,
		})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return changed, nil
}

// Reconcile creates or updates the configuration for gvrs in namespaces, only
// when it differs. With nothing watched the configuration is kept with no
// webhooks (rather than deleted), so whoever installed it still finds it and
// no admission call is made.
func (r *WebhookConfigReconciler) Reconcile(ctx context.Context, gvrs []schema.GroupVersionResource, namespaces []string) error {
	if r.Client == nil {
		return errNoClient
	}
	api := r.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cur, err := api.Get(ctx, r.name(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		want := DesiredWebhookConfiguration(r.name(), r.ClientConfig, gvrs, namespaces)
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cc := r.ClientConfig
	if len(cc.CABundle) == 0 {
		cc.CABundle = existingCABundle(cur)
	}
	want := DesiredWebhookConfiguration(r.name(), cc, gvrs, namespaces)
	if equality.Semantic.DeepEqual(cur.Webhooks, want.Webhooks) && cur.Labels[managedByLabel] == managedByValue {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Webhooks = want.Webhooks
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels[managedByLabel] = managedByValue
	_, err = api.Update(ctx, upd, metav1.UpdateOptions{})
	return err
}

// DesiredWebhookConfiguration builds the configuration: one webhook whose
// rules are the watched resources (plus their content subresources), grouped
// by API group and version, limited to the watched namespaces. Every field
// the API server would default is set, so comparing with the stored object
// finds no spurious difference.
func DesiredWebhookConfiguration(name string, cc admissionregistrationv1.WebhookClientConfig, gvrs []schema.GroupVersionResource, namespaces []string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{managedByLabel: managedByValue}},
	}
	rules := webhookRules(gvrs)
	if len(rules) == 0 || len(namespaces) == 0 {
		return cfg
	}
	cc = *cc.DeepCopy()
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr.To[int32](443)
	}
	cfg.Webhooks = []admissionregistrationv1.ValidatingWebhook{{
		Name:         WebhookName,
		ClientConfig: cc,
		Rules:        rules,
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: slices.Sorted(slices.Values(namespaces)),
		}}},
		ObjectSelector:          &metav1.LabelSelector{},
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
		TimeoutSeconds:          ptr.To[int32](webhookTimeout),
		AdmissionReviewVersions: []string{"v1"},
	}}
	return cfg
}

func webhookRules(gvrs []schema.GroupVersionResource) []admissionregistrationv1.RuleWithOperations {
	byGV := map[schema.GroupVersion][]string{}
	for _, gvr := range gvrs {
		gv := gvr.GroupVersion()
		byGV[gv] = appendUnique(byGV[gv], gvr.Resource)
		for _, sub := range contentSubresources[gvr.GroupResource()] {
			byGV[gv] = appendUnique(byGV[gv], gvr.Resource+"/"+sub)
		}
	}
	gvs := slices.SortedFunc(maps.Keys(byGV), func(a, b schema.GroupVersion) int {
		return strings.Compare(a.String(), b.String())
	})
	var rules []admissionregistrationv1.RuleWithOperations
	for _, gv := range gvs {
		resources := byGV[gv]
		slices.Sort(resources)
		rules = append(rules, admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{
				admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete,
			},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{gv.Group},
				APIVersions: []string{gv.Version},
				Resources:   resources,
				Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
			},
		})
	}
	return rules
}

func existingCABundle(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) []byte {
	for _, wh := range cfg.Webhooks {
		if wh.Name == WebhookName {
			return wh.ClientConfig.CABundle
		}
	}
	return nil
}

func (r *WebhookConfigReconciler) name() string {
	if r.Name == "" {
		return DefaultWebhookConfigurationName
	}
	return r.Name
}

func (r *WebhookConfigReconciler) logger() logr.Logger {
	if r.Logger != nil {
		return *r.Logger
	}
	return klog.Background().WithName("ingest-webhookconfig")
}

var errNoClient = errors.New("ingest: WebhookConfigReconciler needs a Client")
