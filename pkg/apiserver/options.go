package apiserver

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/kubernetes"
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
	// DataDir keeps repository caches and the journal.
	DataDir string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	o := &Options{
		Recommended:  genericoptions.NewRecommendedOptions("", Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)),
		Retention:    time.Hour,
		WatchHistory: 1000,
		DataDir:      "/var/lib/gitsave",
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
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Folder for repository caches and the request journal.")
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

	cfg := &Config{Generic: generic, Extra: ExtraConfig{
		Storage: commitrequest.Options{HistorySize: o.WatchHistory, Retention: o.Retention},
		DataDir: o.DataDir,
	}}
	// generic.ClientConfig is the cluster connection from --kubeconfig (or in-cluster);
	// standalone without --kubeconfig has none.
	if generic.ClientConfig != nil {
		var err error
		if cfg.Extra.ConfigClient, err = configclientset.NewForConfig(generic.ClientConfig); err != nil {
			return nil, err
		}
		if cfg.Extra.KubeClient, err = kubernetes.NewForConfig(generic.ClientConfig); err != nil {
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
