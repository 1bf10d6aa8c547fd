// Package apiserver wires gitsave-apiserver: the generic API server serving
// commitrequests from the in-process registry, the configuration informers, and the
// post-start hooks that run the background loops.
package apiserver

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	configclientset "github.com/gitsave/gitsave/pkg/generated/clientset/versioned"
	configinformers "github.com/gitsave/gitsave/pkg/generated/informers/externalversions"
	"github.com/gitsave/gitsave/pkg/registry/commitrequest"
)

// ExtraConfig is gitsave's own configuration.
type ExtraConfig struct {
	Storage commitrequest.Options
	// GCInterval is how often resolved requests past retention are deleted.
	GCInterval time.Duration
	// ConfigClient reads GitProviders, GitTargets and WatchRules; nil when the server
	// runs standalone without a cluster.
	ConfigClient configclientset.Interface
	// KubeClient reads Secrets and watched resources; nil when standalone.
	KubeClient kubernetes.Interface
	// DataDir keeps repository caches and the journal.
	DataDir string
}

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
	Extra           ExtraConfig
}

// New builds the server from a configuration.
func (c *Config) New() (*Server, error) {
	generic, err := c.Generic.Complete().New("gitsave-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s := &Server{Generic: generic, Extra: c.Extra}

	storageOpts := c.Extra.Storage
	if c.Extra.ConfigClient != nil {
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
		if err := generic.AddPostStartHook("gitsave-config-informers", func(hc genericapiserver.PostStartHookContext) error {
			s.ConfigInformers.Start(hc.Done())
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	return s.Generic.PrepareRun().RunWithContext(ctx)
}
