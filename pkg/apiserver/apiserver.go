// Package apiserver wires gitsave-apiserver: the generic API server serving
// commitrequests from the in-process registry, the configuration informers, and the
// post-start hooks that run the background loops.
package apiserver

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/attribution"
	configclientset "github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
	configinformers "github.com/gitsave/gitsave/pkg/generated/informers/externalversions"
	"github.com/gitsave/gitsave/pkg/ingest"
	"github.com/gitsave/gitsave/pkg/registry/commitrequest"
	"github.com/gitsave/gitsave/pkg/save"
	"github.com/gitsave/gitsave/pkg/worker"
)

// ExtraConfig is gitsave's own configuration.
type ExtraConfig struct {
	Storage commitrequest.Options
	// GCInterval is how often resolved requests past retention are deleted.
	GCInterval time.Duration
	// ConfigClient reads GitProviders, GitTargets and WatchRules; nil when the server
	// runs standalone without a cluster.
	ConfigClient configclientset.Interface
	// KubeClient reads Secrets, discovers resources and manages the webhook
	// configuration; nil when standalone.
	KubeClient kubernetes.Interface
	// Dynamic watches the mirrored resources; nil when standalone.
	Dynamic dynamic.Interface
	// DataDir keeps the repository caches ("" keeps them in memory).
	DataDir string
	// FactTTL, FallbackAuthor and SettleTimeout configure attribution (see Options).
	FactTTL        time.Duration
	FallbackAuthor string
	SettleTimeout  time.Duration
	// WebhookClient is how the kube-apiserver reaches the attribution webhook; nil
	// when gitsave manages no webhook configuration.
	WebhookClient *admissionregistrationv1.WebhookClientConfig
	// Clock drives attribution and the workers (default: the real clock).
	Clock clock.WithTicker
}

// AttributionWebhookPath is where gitsave serves its admission webhook. It sits behind
// the server's authentication and authorization: the kube-apiserver calls it with a
// client certificate, and RBAC allows that identity to post to this path.
const AttributionWebhookPath = "/webhooks/attribution"

// Config is the whole server configuration.
type Config struct {
	Generic *genericapiserver.RecommendedConfig
	Extra   ExtraConfig
}

// Server is a running gitsave-apiserver.
type Server struct {
	Generic         *genericapiserver.GenericAPIServer
	CommitRequests  *commitrequest.REST
	ConfigInformers configinformers.SharedInformerFactory
	// Attribution holds the admitted writes that explain watch events.
	Attribution *attribution.Index
	// Workers and Ingest are nil when the server runs without a cluster.
	Workers *worker.Manager
	Ingest  *ingest.Controller
	Extra   ExtraConfig
}

// New builds the server from a configuration.
func (c *Config) New() (*Server, error) {
	generic, err := c.Generic.Complete().New("gitsave-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	if c.Extra.Clock == nil {
		c.Extra.Clock = clock.RealClock{}
	}
	s := &Server{Generic: generic, Extra: c.Extra}
	s.Attribution = attribution.NewIndex(c.Extra.Clock, attribution.Options{TTL: c.Extra.FactTTL})
	generic.Handler.NonGoRestfulMux.Handle(AttributionWebhookPath, attribution.NewWebhook(s.Attribution))

	storageOpts := c.Extra.Storage
	storageOpts.Barrier = func(author, namespace, target string) []save.EditKey {
		if s.Ingest == nil {
			return nil
		}
		return s.Ingest.BarrierKeys(author, namespace, target)
	}
	if c.Extra.ConfigClient != nil && c.Extra.KubeClient != nil {
		s.ConfigInformers = configinformers.NewSharedInformerFactory(c.Extra.ConfigClient, 10*time.Minute)
		targets := s.ConfigInformers.Config().V1alpha1().GitTargets()
		storageOpts.Targets = commitrequest.CachedTargets{Lister: targets.Lister(), Client: c.Extra.ConfigClient.ConfigV1alpha1()}
	}
	s.CommitRequests = commitrequest.NewREST(Scheme, storageOpts)

	group := genericapiserver.NewDefaultAPIGroupInfo(gitsave.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap["v1alpha1"] = map[string]rest.Storage{"commitrequests": s.CommitRequests}
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("installing %s: %w", gitsave.GroupName, err)
	}

	gcEvery := c.Extra.GCInterval
	if gcEvery <= 0 {
		gcEvery = time.Minute
	}
	if err := generic.AddPostStartHook("gitsave-commitrequest-gc", func(hc genericapiserver.PostStartHookContext) error {
		go s.CommitRequests.RunGarbageCollection(hc, gcEvery)
		return nil
	}); err != nil {
		return nil, err
	}
	if s.ConfigInformers != nil {
		if err := s.runWorkers(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// repositoryCaches is where the branch workers keep their repository caches
// under --data-dir; "" keeps them in memory.
func repositoryCaches(dataDir string) string {
	if dataDir == "" {
		return ""
	}
	return filepath.Join(dataDir, "repositories")
}

// runWorkers connects the branch workers: CommitRequests are attached to them, their
// progress comes back as status, and GitProvider/GitTarget status is written. The
// workers stop (finalizing and pushing what they hold) before the server exits.
func (s *Server) runWorkers() error {
	config := s.ConfigInformers.Config().V1alpha1()
	manager, err := worker.NewManager(worker.ManagerConfig{
		Providers: config.GitProviders(),
		Targets:   config.GitTargets(),
		Secrets:   worker.SecretsFromClient(s.Extra.KubeClient),
		DataDir:   repositoryCaches(s.Extra.DataDir),
		Reporter:  s.CommitRequests,
		Worker:    worker.Config{SettleTimeout: s.Extra.SettleTimeout},
	})
	if err != nil {
		return err
	}
	s.Workers = manager
	s.CommitRequests.SetSaver(manager)
	status := &worker.StatusWriter{Client: s.Extra.ConfigClient, Manager: manager}

	if s.Extra.Dynamic != nil {
		s.Ingest, err = ingest.NewController(ingest.Config{
			Dynamic:    s.Extra.Dynamic,
			Discovery:  s.Extra.KubeClient.Discovery(),
			WatchRules: config.WatchRules(),
			Targets:    config.GitTargets(),
			Client:     s.Extra.ConfigClient,
			Index:      s.Attribution,
			Sink:       manager,
			Fallback:   save.Author{Username: s.Extra.FallbackAuthor},
			Clock:      s.Extra.Clock,
		})
		if err != nil {
			return err
		}
	}
	var webhookConfig *ingest.WebhookConfigReconciler
	if s.Ingest != nil && s.Extra.WebhookClient != nil {
		webhookConfig = &ingest.WebhookConfigReconciler{Client: s.Extra.KubeClient, ClientConfig: *s.Extra.WebhookClient}
	}

	if err := s.Generic.AddPostStartHook("gitsave-branch-workers", func(hc genericapiserver.PostStartHookContext) error {
		s.ConfigInformers.Start(hc.Done())
		go manager.Run(hc)
		go status.Run(hc)
		if s.Ingest != nil {
			go s.Ingest.Run(hc)
		}
		if webhookConfig != nil {
			go webhookConfig.Run(hc, s.Ingest)
		}
		return nil
	}); err != nil {
		return err
	}
	return s.Generic.AddPreShutdownHook("gitsave-branch-workers", func() error {
		manager.Stop()
		return nil
	})
}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	return s.Generic.PrepareRun().RunWithContext(ctx)
}
