package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
	"github.com/gitsave/gitsave/pkg/apiserver"
	"github.com/gitsave/gitsave/pkg/apiserver/apiservertest"
	"github.com/gitsave/gitsave/pkg/generated/clientset/versioned/fake"
	"github.com/gitsave/gitsave/pkg/git/gittest"
	"github.com/gitsave/gitsave/pkg/save"
	"github.com/gitsave/gitsave/pkg/worker"
)

// TestSaveRoundTrip runs the whole Save path in-process: the apiserver with its branch
// workers, a GitProvider/GitTarget (from a fake config client) for a bare repository
// served over smart HTTP, an edit of jane's fed to the worker, and a CommitRequest
// created as jane.
func TestSaveRoundTrip(t *testing.T) {
	remote := gittest.NewServer(t, "", "gitsave", "s3cret")
	repoDir := remote.NewRepo(t, "demo.git")

	configClient, kubeClient := gitConfig(remote.URL("demo.git"))
	srv := apiservertest.Start(t, nil, func(c *apiserver.Config) {
		c.Extra.ConfigClient = configClient
		c.Extra.KubeClient = kubeClient
	})
	require.NotNil(t, srv.Workers)
	ctx := context.Background()
	jane := save.Author{Username: "jane", Groups: []string{"editors"}}

	// jane's edit opens her window; the window is long, so nothing is pushed yet.
	require.Eventually(t, func() bool {
		return srv.Workers.TargetState("demo/dev").Served
	}, 30*time.Second, 20*time.Millisecond, "a worker serves demo/dev")
	srv.Workers.Submit(worker.Event{
		Target: "demo/dev", Path: "clusters/dev/demo/configmaps/web.yaml",
		Content: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  replicas: \"3\"\n"),
		Author:  jane, Observed: time.Now(),
	})
	srv.Workers.Sync()
	assert.Empty(t, gittest.Head(t, repoDir, "main"), "nothing reaches the remote before Save")

	crs := (&env{Server: srv}).client(t, srv.As("jane", "editors")).GitsaveV1alpha1().CommitRequests("demo")
	w, err := crs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=save-web"})
	require.NoError(t, err)
	defer w.Stop()
	message := "Scale web to 3\n\nFor the launch: ü ✓"
	_, err = crs.Create(ctx, &v1alpha1.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "save-web"},
		Spec:       v1alpha1.CommitRequestSpec{TargetRef: v1alpha1.TargetReference{Name: "dev"}, Message: message},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	var reasons []string
	var final *v1alpha1.CommitRequest
	timeout := time.After(60 * time.Second)
	for final == nil {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok)
			require.NotEqual(t, watch.Error, ev.Type)
			cr := ev.Object.(*v1alpha1.CommitRequest)
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1alpha1.ConditionReady)
			require.NotNil(t, ready)
			reasons = append(reasons, ready.Reason)
			if ready.Status == metav1.ConditionTrue || meta.IsStatusConditionTrue(cr.Status.Conditions, v1alpha1.ConditionStalled) {
				final = cr
			}
		case <-timeout:
			t.Fatalf("the request did not resolve; reasons so far %v", reasons)
		}
	}
	t.Logf("transitions seen by the watch: %v", reasons)
	assert.Contains(t, reasons, v1alpha1.ReasonAwaitingPush, "the watch shows the request waiting for its push")

	ready := meta.FindStatusCondition(final.Status.Conditions, v1alpha1.ConditionReady)
	assert.Equal(t, v1alpha1.ReasonCommitted, ready.Reason)
	assert.True(t, meta.IsStatusConditionTrue(final.Status.Conditions, v1alpha1.ConditionPushed))
	assert.Equal(t, "main", final.Status.Branch)
	assert.Equal(t, int32(1), final.Status.FilesChanged)
	head := gittest.Head(t, repoDir, "main")
	assert.Equal(t, head, final.Status.SHA, "status.sha is the remote branch head")

	log := gittest.Log(t, repoDir, "main")
	require.Len(t, log, 1, "exactly one commit")
	assert.Equal(t, message+"\n\nCommit-Request: demo/save-web\nCommit-Request-UID: "+string(final.UID)+"\n", log[0].Message,
		"the commit message is spec.message byte for byte, followed by the request's trailers")
	assert.Equal(t, message, worker.MessageWithoutTrailers(log[0].Message))
	assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author)
	content, ok := gittest.ShowFile(t, repoDir, "main", "clusters/dev/demo/configmaps/web.yaml")
	require.True(t, ok)
	assert.Contains(t, string(content), "replicas: \"3\"")
}

// gitConfig is the fake cluster's side of a target: GitProvider demo/repo for url with
// the credentials Secret demo/git-creds, GitTarget demo/dev (folder clusters/dev on
// main, a long commit window), and any further config objects.
func gitConfig(url string, more ...runtime.Object) (*fake.Clientset, *k8sfake.Clientset) {
	objects := append([]runtime.Object{
		&configv1alpha1.GitProvider{
			ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: "demo"},
			Spec: configv1alpha1.GitProviderSpec{URL: url,
				SecretRef: &configv1alpha1.LocalObjectReference{Name: "git-creds"}},
		},
		&configv1alpha1.GitTarget{
			ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "demo"},
			Spec: configv1alpha1.GitTargetSpec{ProviderRef: configv1alpha1.LocalObjectReference{Name: "repo"},
				Branch: "main", Path: "clusters/dev", CommitWindow: metav1.Duration{Duration: 5 * time.Minute}, MaxWindowEvents: 1000},
		},
	}, more...)
	kubeClient := k8sfake.NewSimpleClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: "demo"},
		Data:       map[string][]byte{"username": []byte("gitsave"), "password": []byte("s3cret")},
	})
	return fake.NewSimpleClientset(objects...), kubeClient
}
