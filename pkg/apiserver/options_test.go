package apiserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each bad value is refused with the flag named.
func TestValidateNamesTheBadFlag(t *testing.T) {
	for flag, set := range map[string]func(*Options){
		"--kube-api-qps":            func(o *Options) { o.KubeAPIQPS = 0 },
		"--kube-api-burst":          func(o *Options) { o.KubeAPIBurst = 0 },
		"--commitrequest-retention": func(o *Options) { o.Retention = 0 },
		"--watch-history":           func(o *Options) { o.WatchHistory = 0 },
		"--fallback-author":         func(o *Options) { o.Attribution.FallbackAuthor = "" },
		"--save-settle-timeout":     func(o *Options) { o.Attribution.SettleTimeout = 0 },
	} {
		t.Run(flag, func(t *testing.T) {
			o := NewOptions()
			set(o)
			assert.ErrorContains(t, o.Validate(), flag)
		})
	}
}

// An empty --data-dir keeps the repository caches in memory, not in a relative
// folder of the working directory.
func TestEmptyDataDirKeepsCachesInMemory(t *testing.T) {
	assert.Empty(t, repositoryCaches(""))
	assert.Equal(t, "/var/lib/gitsave/repositories", repositoryCaches("/var/lib/gitsave"))
}
