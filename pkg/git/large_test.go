package git

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/git/gittest"
)

// manyFiles returns n files nested like a mirror: <namespace>/<kind>/<name>.yaml
// with 200 objects per namespace, 50 per kind (depth 2).
func manyFiles(n int) []Change {
	out := make([]Change, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, set(manyPath(i), "kind: ConfigMap\nmetadata:\n  name: obj-"+strconv.Itoa(i)+"\n"))
	}
	return out
}

func manyPath(i int) string {
	return fmt.Sprintf("ns-%03d/kind-%d/obj-%05d.yaml", i/200, (i/50)%4, i)
}

// A commit of one file at depth d writes d+1 trees, 1 blob and 1 commit, and
// the push sends exactly those, whatever the size of the repository.
func TestCommitCostIsPathDepth(t *testing.T) {
	rm := httpRemote(t)
	r := rm.open(t, "")
	const n = 20000
	changes := append(manyFiles(n),
		set("top.yaml", "top"),
		set("deep/l1/l2/l3/l4/leaf.yaml", "leaf"))
	res := commit(t, r, "import", changes...)
	require.Equal(t, n+2, res.FilesChanged)
	push(t, r)
	assert.Equal(t, res.ObjectsWritten, r.LastPush().Objects, "the first push sends everything once")
	assert.Len(t, gittest.Files(t, rm.dir, "main"), n+2)

	for _, tc := range []struct {
		path  string
		depth int
	}{
		{"top.yaml", 0},
		{manyPath(12345), 2},
		{"deep/l1/l2/l3/l4/leaf.yaml", 5},
		{"deep/l1/l2/l3/l4/new.yaml", 5}, // a new file costs the same
	} {
		t.Run(tc.path, func(t *testing.T) {
			content := "changed " + tc.path
			res := commit(t, r, "one file", set(tc.path, content))
			assert.Equal(t, 1, res.FilesChanged)
			assert.Equal(t, tc.depth+3, res.ObjectsWritten, "d+1 trees + blob + commit")
			push(t, r)
			assert.Equal(t, tc.depth+3, r.LastPush().Objects, "pack holds only the new objects")
			assert.Equal(t, r.Tip().String(), gittest.Head(t, rm.dir, "main"))
			got, ok := gittest.ShowFile(t, rm.dir, "main", tc.path)
			require.True(t, ok)
			assert.Equal(t, content, string(got))
		})
	}

	// Two files in one folder share their trees: 2 blobs + 3 trees + commit.
	res = commit(t, r, "two files", set(manyPath(0), "x"), set(manyPath(1), "y"))
	assert.Equal(t, 6, res.ObjectsWritten)
	// A delete writes no blob: 3 trees + commit.
	res = commit(t, r, "delete", del(manyPath(2)))
	assert.Equal(t, 4, res.ObjectsWritten)
	push(t, r)
	assert.Equal(t, 10, r.LastPush().Objects, "both commits' objects, once each")
	files := gittest.Files(t, rm.dir, "main")
	assert.Len(t, files, n+2)
	assert.False(t, strings.Contains(strings.Join(files, "\n"), manyPath(2)))
}
