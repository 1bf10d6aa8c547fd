package apiserver

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	netutils "k8s.io/utils/net"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	configclientset "github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
	gitsaveopenapi "github.com/gitsave/gitsave/pkg/generated/openapi"
	"github.com/gitsave/gitsave/pkg/registry/commitrequest"
)

// Options are gitsave-apiserver's command-line options.
type Options struct {
	Recommended *genericoptions.RecommendedOptions

	// Standalone serves without a kube-apiserver in front: clients authenticate with
	// certificates signed by --client-ca-file and every authenticated client is
	// authorized (there is no cluster to delegate authorization to).
	Standalone bool
	// Retention is how long a resolved CommitRequest is kept.
	Retention time.Duration
	// WatchHistory is how many changes a watch can resume across.
	WatchHistory int
	// DataDir keeps the repository caches ("" keeps them in memory).
	DataDir string
	// Attribution configures the admission webhook that records who made each edit.
	Attribution AttributionOptions
	// KubeAPIQPS and KubeAPIBurst limit gitsave's own requests to the cluster
	// (lists of watched resources, Secrets, status writes, the webhook
	// configuration); client-go's defaults (5, 10) make a start with many
	// targets wait on the client side.
	KubeAPIQPS   float32
	KubeAPIBurst int
}

// AttributionOptions configure authorship of mirrored edits.
type AttributionOptions struct {
	// WebhookURL is where the kube-apiserver calls the attribution webhook; empty
	// with WebhookService empty means no webhook configuration is managed.
	WebhookURL string
	// WebhookService is "namespace/name:port" of the Service in front of gitsave.
	WebhookService string
	// WebhookCAFile is the CA bundle the kube-apiserver verifies gitsave's serving
	// certificate with.
	WebhookCAFile string
	// FactTTL bounds how long an admitted write can explain a watch event.
	FactTTL time.Duration
	// FallbackAuthor is the author of edits with no admission fact (a write the
	// webhook did not see, e.g. by a controller).
	FallbackAuthor string
	// SettleTimeout bounds how long a Save waits for edits admitted before it.
	SettleTimeout time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	o := &Options{
		Recommended:  genericoptions.NewRecommendedOptions("", Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)),
		Retention:    time.Hour,
		WatchHistory: 1000,
		DataDir:      "/var/lib/gitsave",
		KubeAPIQPS:   50,
		KubeAPIBurst: 100,
		Attribution: AttributionOptions{
			FactTTL:        30 * time.Second,
			FallbackAuthor: "gitsave:unattributed",
			SettleTimeout:  2 * time.Second,
		},
	}
	// CommitRequests live in memory; there is no etcd.
	o.Recommended.Etcd = nil
	return o
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Recommended.AddFlags(fs)
	fs.BoolVar(&o.Standalone, "standalone", o.Standalone,
		"Serve without a kube-apiserver in front, for local use: client certificates authenticate (--client-ca-file), every authenticated client is authorized, and no admission plugins run. --kubeconfig, when given, still finds GitTargets.")
	fs.DurationVar(&o.Retention, "commitrequest-retention", o.Retention,
		"How long a CommitRequest is kept after it reached its outcome.")
	fs.IntVar(&o.WatchHistory, "watch-history", o.WatchHistory,
		"How many changes to CommitRequests are kept for watches resuming from a resourceVersion; older ones get 410 Gone.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Folder for the repository caches (empty: keep them in memory).")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second gitsave's own clients may send to the cluster's API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests gitsave's own clients may send to the cluster's API server.")
	a := &o.Attribution
	fs.StringVar(&a.WebhookURL, "attribution-webhook-url", a.WebhookURL,
		"URL the kube-apiserver calls for the attribution admission webhook (path "+AttributionWebhookPath+"); gitsave keeps a ValidatingWebhookConfiguration pointing there.")
	fs.StringVar(&a.WebhookService, "attribution-webhook-service", a.WebhookService,
		"Service in front of gitsave for the attribution webhook, as namespace/name:port (instead of --attribution-webhook-url).")
	fs.StringVar(&a.WebhookCAFile, "attribution-webhook-ca-file", a.WebhookCAFile,
		"CA bundle the kube-apiserver verifies gitsave's serving certificate with when it calls the webhook.")
	fs.DurationVar(&a.FactTTL, "attribution-fact-ttl", a.FactTTL,
		"How long an admitted write can explain a watch event; older facts are dropped.")
	fs.StringVar(&a.FallbackAuthor, "fallback-author", a.FallbackAuthor,
		"Author of mirrored edits that no admission fact explains.")
	fs.DurationVar(&a.SettleTimeout, "save-settle-timeout", a.SettleTimeout,
		"How long a CommitRequest waits for edits its author made just before it that are not yet seen on the watch.")
}

// Validate checks the options.
func (o *Options) Validate() error {
	errs := o.Recommended.Validate()
	if o.Retention <= 0 {
		errs = append(errs, fmt.Errorf("--commitrequest-retention must be positive"))
	}
	if o.WatchHistory < 1 {
		errs = append(errs, fmt.Errorf("--watch-history must be at least 1"))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive and --kube-api-burst at least 1"))
	}
	a := o.Attribution
	if a.WebhookURL != "" && a.WebhookService != "" {
		errs = append(errs, fmt.Errorf("--attribution-webhook-url and --attribution-webhook-service are exclusive"))
	}
	if a.WebhookService != "" {
		if _, _, _, err := parseService(a.WebhookService); err != nil {
			errs = append(errs, err)
		}
	}
	if a.FactTTL <= 0 || a.SettleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--attribution-fact-ttl and --save-settle-timeout must be positive"))
	}
	if a.FallbackAuthor == "" {
		errs = append(errs, fmt.Errorf("--fallback-author must not be empty"))
	}
	return utilerrors.NewAggregate(errs)
}

// Config turns the options into a server configuration.
func (o *Options) Config() (*Config, error) {
	if err := o.Recommended.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost",
		[]string{"gitsave-apiserver.gitsave-system.svc"}, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}
	if o.Standalone {
		o.applyStandalone()
	}

	generic := genericapiserver.NewRecommendedConfig(Codecs)
	namer := openapi.NewDefinitionNamer(Scheme)
	generic.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(gitsaveopenapi.GetOpenAPIDefinitions, namer)
	generic.OpenAPIConfig.Info.Title = "gitsave"
	generic.OpenAPIConfig.Info.Version = v1alpha1.SchemeGroupVersion.Version
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(gitsaveopenapi.GetOpenAPIDefinitions, namer)
	generic.OpenAPIV3Config.Info.Title = "gitsave"
	generic.OpenAPIV3Config.Info.Version = v1alpha1.SchemeGroupVersion.Version
	generic.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()

	if err := o.Recommended.ApplyTo(generic); err != nil {
		return nil, err
	}

	webhook, err := o.Attribution.clientConfig()
	if err != nil {
		return nil, err
	}
	cfg := &Config{Generic: generic, Extra: ExtraConfig{
		Storage:        commitrequest.Options{HistorySize: o.WatchHistory, Retention: o.Retention},
		DataDir:        o.DataDir,
		FactTTL:        o.Attribution.FactTTL,
		FallbackAuthor: o.Attribution.FallbackAuthor,
		SettleTimeout:  o.Attribution.SettleTimeout,
		WebhookClient:  webhook,
	}}
	// generic.ClientConfig is the cluster connection from --kubeconfig (or in-cluster);
	// standalone without --kubeconfig has none.
	if generic.ClientConfig != nil {
		// gitsave's own clients: their own rate limits and user agent; the
		// generic server's config is left as it is.
		rc := rest.CopyConfig(generic.ClientConfig)
		rc.QPS, rc.Burst = o.KubeAPIQPS, o.KubeAPIBurst
		rc = rest.AddUserAgent(rc, "gitsave-apiserver")
		if cfg.Extra.ConfigClient, err = configclientset.NewForConfig(rc); err != nil {
			return nil, err
		}
		if cfg.Extra.KubeClient, err = kubernetes.NewForConfig(rc); err != nil {
			return nil, err
		}
		if cfg.Extra.Dynamic, err = dynamic.NewForConfig(rc); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// applyStandalone trims the options to what works without a cluster.
func (o *Options) applyStandalone() {
	r := o.Recommended
	r.Authentication.RemoteKubeConfigFileOptional = true
	r.Authentication.SkipInClusterLookup = true
	r.Authorization.RemoteKubeConfigFileOptional = true
	r.Authorization.AlwaysAllowGroups = append(r.Authorization.AlwaysAllowGroups, "system:authenticated")
	r.Admission = nil
	r.Features.EnablePriorityAndFairness = false
	if r.CoreAPI != nil && r.CoreAPI.CoreAPIKubeconfigPath == "" {
		r.CoreAPI = nil
	}
}

// clientConfig is how the kube-apiserver reaches the attribution webhook; nil when
// none is configured.
func (a AttributionOptions) clientConfig() (*admissionregistrationv1.WebhookClientConfig, error) {
	if a.WebhookURL == "" && a.WebhookService == "" {
		return nil, nil
	}
	cc := &admissionregistrationv1.WebhookClientConfig{}
	if a.WebhookCAFile != "" {
		ca, err := os.ReadFile(a.WebhookCAFile)
		if err != nil {
			return nil, fmt.Errorf("--attribution-webhook-ca-file: %w", err)
		}
		cc.CABundle = ca
	}
	if a.WebhookURL != "" {
		cc.URL = &a.WebhookURL
		return cc, nil
	}
	ns, name, port, err := parseService(a.WebhookService)
	if err != nil {
		return nil, err
	}
	path := AttributionWebhookPath
	cc.Service = &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name, Port: &port, Path: &path}
	return cc, nil
}

// parseService reads namespace/name:port.
func parseService(s string) (namespace, name string, port int32, err error) {
	bad := fmt.Errorf("--attribution-webhook-service %q: want namespace/name:port", s)
	nsName, portText, ok := strings.Cut(s, ":")
	namespace, name, ok2 := strings.Cut(nsName, "/")
	if !ok || !ok2 || namespace == "" || name == "" {
		return "", "", 0, bad
	}
	p, perr := strconv.ParseInt(portText, 10, 32)
	if perr != nil || p <= 0 || p > 65535 {
		return "", "", 0, bad
	}
	return namespace, name, int32(p), nil
}
