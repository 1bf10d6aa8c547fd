package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
)

func newRequest(name, message string) *v1alpha1.CommitRequest {
	return &v1alpha1.CommitRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.CommitRequestSpec{TargetRef: v1alpha1.TargetReference{Name: "dev"}, Message: message},
	}
}

func TestCreateStampsAuthorFromTheRequest(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()

	cr := newRequest("save-1", "Scale web to 3")
	// A client that claims another author and a finished status is ignored.
	cr.Status = v1alpha1.CommitRequestStatus{
		Author: &v1alpha1.Author{Username: "mallory", Groups: []string{"system:masters"}},
		SHA:    "deadbeef",
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonCommitted, LastTransitionTime: metav1.Now()}},
	}
	created, err := e.jane(t).GitsaveV1alpha1().CommitRequests("demo").Create(ctx, cr, metav1.CreateOptions{})
	require.NoError(t, err)

	require.NotNil(t, created.Status.Author)
	assert.Equal(t, "jane", created.Status.Author.Username)
	assert.Contains(t, created.Status.Author.Groups, "editors")
	assert.Contains(t, created.Status.Author.Groups, "system:authenticated")
	assert.Empty(t, created.Status.SHA)
	attributed := meta.FindStatusCondition(created.Status.Conditions, v1alpha1.ConditionAttributed)
	require.NotNil(t, attributed)
	assert.Equal(t, metav1.ConditionTrue, attributed.Status)
	assert.Equal(t, v1alpha1.ReasonRequestUser, attributed.Reason)
	assert.Equal(t, int64(1), attributed.ObservedGeneration)
	ready := meta.FindStatusCondition(created.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status, "a new request is in progress, whatever the client claimed")
	assert.Equal(t, int32(0), *created.Spec.CloseDelaySeconds, "closeDelaySeconds defaults to 0")

	// The worker received the request with the author from the request, not the body.
	reqs := e.saver.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "jane", reqs[0].Author.Username)
	assert.Equal(t, "Scale web to 3", reqs[0].Message)
	assert.Equal(t, created.UID, reqs[0].UID)

	// An update that tries to rewrite the status changes nothing.
	created.Status.Author.Username = "mallory"
	updated, err := e.jane(t).GitsaveV1alpha1().CommitRequests("demo").Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "jane", updated.Status.Author.Username)
}

func TestCreateWithGenerateNameAndDryRun(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()
	crs := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")

	cr := newRequest("", "generated")
	cr.GenerateName = "save-"
	created, err := crs.Create(ctx, cr, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(created.Name, "save-"), created.Name)

	dry, err := crs.Create(ctx, newRequest("dry", "not stored"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	assert.Equal(t, "jane", dry.Status.Author.Username)
	_, err = crs.Get(ctx, "dry", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a dry-run create stores nothing: %v", err)
	assert.Len(t, e.saver.requests(), 1, "a dry-run create reaches no worker")
}

// causeField returns the field named by a 422's single cause.
func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
	status, ok := err.(apierrors.APIStatus)
	require.True(t, ok)
	details := status.Status().Details
	require.NotNil(t, details)
	var fields []string
	for _, c := range details.Causes {
		fields = append(fields, c.Field)
	}
	assert.Contains(t, fields, field, "error: %v", err)
}

func TestCreateRefusesBadInputNamingTheField(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()
	crs := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")

	cases := []struct {
		name   string
		mutate func(*v1alpha1.CommitRequest)
		field  string
	}{
		{"tab in message", func(c *v1alpha1.CommitRequest) { c.Spec.Message = "a\tb" }, "spec.message"},
		{"1025 runes", func(c *v1alpha1.CommitRequest) { c.Spec.Message = strings.Repeat("x", 1025) }, "spec.message"},
		{"closeDelaySeconds -1", func(c *v1alpha1.CommitRequest) { c.Spec.CloseDelaySeconds = ptr.To[int32](-1) }, "spec.closeDelaySeconds"},
		{"closeDelaySeconds 301", func(c *v1alpha1.CommitRequest) { c.Spec.CloseDelaySeconds = ptr.To[int32](301) }, "spec.closeDelaySeconds"},
		{"missing targetRef.name", func(c *v1alpha1.CommitRequest) { c.Spec.TargetRef.Name = "" }, "spec.targetRef.name"},
		{"unknown target", func(c *v1alpha1.CommitRequest) { c.Spec.TargetRef.Name = "nope" }, "spec.targetRef.name"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cr := newRequest("bad-"+string(rune('a'+i)), "ok")
			tc.mutate(cr)
			_, err := crs.Create(ctx, cr, metav1.CreateOptions{})
			requireInvalid(t, err, tc.field)
		})
	}
	list, err := crs.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "no refused request was stored")

	multiByte := newRequest("long", strings.Repeat("ü", 1024))
	created, err := crs.Create(ctx, multiByte, metav1.CreateOptions{})
	require.NoError(t, err, "1024 multi-byte runes (2048 bytes) are within the limit")
	assert.Equal(t, multiByte.Spec.Message, created.Spec.Message)
}

func TestSpecIsImmutableMetadataIsNot(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()
	crs := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")
	created, err := crs.Create(ctx, newRequest("save", "first"), metav1.CreateOptions{})
	require.NoError(t, err)

	changed := created.DeepCopy()
	changed.Spec.Message = "second"
	_, err = crs.Update(ctx, changed, metav1.UpdateOptions{})
	requireInvalid(t, err, "spec")

	_, err = crs.Patch(ctx, "save", types.MergePatchType, []byte(`{"spec":{"closeDelaySeconds":5}}`), metav1.PatchOptions{})
	requireInvalid(t, err, "spec")

	labelled, err := crs.Patch(ctx, "save", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"web"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, "web", labelled.Labels["team"])
	assert.NotEqual(t, created.ResourceVersion, labelled.ResourceVersion)

	same, err := crs.Patch(ctx, "save", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"web"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, labelled.ResourceVersion, same.ResourceVersion, "a no-op patch does not bump the resourceVersion")

	stale := labelled.DeepCopy()
	stale.ResourceVersion = created.ResourceVersion
	stale.Labels["team"] = "ops"
	_, err = crs.Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "an update from a stale resourceVersion is a conflict: %v", err)
}

func TestDeleteCancelsPendingRequest(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()
	crs := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")
	created, err := crs.Create(ctx, newRequest("save", "m"), metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, crs.Delete(ctx, "save", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}))
	_, err = crs.Get(ctx, "save", metav1.GetOptions{})
	require.NoError(t, err, "a dry-run delete keeps the object")
	assert.Empty(t, e.saver.cancellations())

	require.NoError(t, crs.Delete(ctx, "save", metav1.DeleteOptions{}))
	_, err = crs.Get(ctx, "save", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	assert.Equal(t, []types.UID{created.UID}, e.saver.cancellations())
}

func TestListSelectors(t *testing.T) {
	e := startServer(t, nil)
	ctx := context.Background()
	jane := e.jane(t).GitsaveV1alpha1().CommitRequests("demo")
	bob := e.client(t, e.As("bob", "editors")).GitsaveV1alpha1().CommitRequests("demo")

	a := newRequest("a", "m")
	a.Labels = map[string]string{"team": "web"}
	_, err := jane.Create(ctx, a, metav1.CreateOptions{})
	require.NoError(t, err)
	b := newRequest("b", "m")
	b.Spec.TargetRef.Name = "prod"
	_, err = bob.Create(ctx, b, metav1.CreateOptions{})
	require.NoError(t, err)

	names := func(opts metav1.ListOptions) []string {
		list, err := jane.List(ctx, opts)
		require.NoError(t, err)
		var out []string
		for _, i := range list.Items {
			out = append(out, i.Name)
		}
		return out
	}
	assert.Equal(t, []string{"a", "b"}, names(metav1.ListOptions{}))
	assert.Equal(t, []string{"a"}, names(metav1.ListOptions{LabelSelector: "team=web"}))
	assert.Equal(t, []string{"b"}, names(metav1.ListOptions{FieldSelector: "spec.targetRef.name=prod"}))
	assert.Equal(t, []string{"b"}, names(metav1.ListOptions{FieldSelector: "status.author.username=bob"}))
	assert.Equal(t, []string{"a"}, names(metav1.ListOptions{FieldSelector: "metadata.name=a"}))

	_, err = jane.List(ctx, metav1.ListOptions{FieldSelector: "spec.message=m"})
	assert.True(t, apierrors.IsBadRequest(err), "an unsupported field selector is a 400: %v", err)
}
