package commitrequest

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/clock"

	"github.com/gitsave/gitsave/pkg/apis/gitsave"
	"github.com/gitsave/gitsave/pkg/apis/gitsave/v1alpha1"
)

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the CommitRequest."},
	{Name: "Target", Type: "string", Description: "The GitTarget saved."},
	{Name: "Author", Type: "string", Description: "The authenticated user who asked."},
	{Name: "Ready", Type: "string", Description: "Whether the request reached an outcome that is not a failure."},
	{Name: "Reason", Type: "string", Description: "The reason of the Ready condition."},
	{Name: "SHA", Type: "string", Description: "The pushed commit, shortened."},
	{Name: "Age", Type: "string", Description: "Time since creation."},
	{Name: "Pushed", Type: "string", Priority: 1, Description: "Whether the commit is on the remote."},
	{Name: "Branch", Type: "string", Priority: 1, Description: "The branch pushed to."},
	{Name: "Finalized-By", Type: "string", Priority: 1, Description: "Which path closed the window."},
}

// tableConvertor prints CommitRequests for kubectl get.
type tableConvertor struct{ clock clock.PassiveClock }

func (c tableConvertor) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = columns
	}
	var items []runtime.Object
	switch o := obj.(type) {
	case *gitsave.CommitRequest:
		items = []runtime.Object{o}
		table.ResourceVersion = o.ResourceVersion
	case *gitsave.CommitRequestList:
		for i := range o.Items {
			items = append(items, &o.Items[i])
		}
		table.ResourceVersion = o.ResourceVersion
		table.Continue = o.Continue
	default:
		return nil, fmt.Errorf("cannot print %T as a CommitRequest table", obj)
	}
	for _, item := range items {
		cr := item.(*gitsave.CommitRequest)
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  c.cells(cr),
			Object: runtime.RawExtension{Object: item},
		})
	}
	return table, nil
}

func (c tableConvertor) cells(cr *gitsave.CommitRequest) []interface{} {
	author := "<unknown>"
	if cr.Status.Author != nil {
		author = cr.Status.Author.Username
	}
	ready, reason := conditionCells(cr, v1alpha1.ConditionReady)
	pushed, _ := conditionCells(cr, v1alpha1.ConditionPushed)
	sha := cr.Status.SHA
	if len(sha) > 8 {
		sha = sha[:8]
	}
	age := "<unknown>"
	if !cr.CreationTimestamp.IsZero() {
		age = duration.HumanDuration(c.clock.Since(cr.CreationTimestamp.Time))
	}
	return []interface{}{cr.Name, cr.Spec.TargetRef.Name, author, ready, reason, sha, age,
		pushed, cr.Status.Branch, cr.Status.FinalizedBy}
}

func conditionCells(cr *gitsave.CommitRequest, typ string) (status, reason string) {
	c := meta.FindStatusCondition(cr.Status.Conditions, typ)
	if c == nil {
		return "", ""
	}
	return string(c.Status), c.Reason
}
