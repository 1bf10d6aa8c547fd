package git

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/git/gittest"
)

// Names that sort differently as files and as folders ("a" vs "a/", '!' '-'
// '.' sort before '/', '0' after): our trees must hash exactly like git's.
func TestTreeOrderMatchesGit(t *testing.T) {
	paths := []string{"a.yaml", "a/x", "a-b", "a0", "a!", "a.b/c", "ab/c", "b", "a/b/c/d", "A", "a~"}
	rm := localRemote(t)
	r := rm.open(t, "")
	var changes []Change
	for _, p := range paths {
		changes = append(changes, set(p, "content of "+p))
	}
	// Add in two batches to exercise merging into an existing sorted tree.
	commit(t, r, "half", changes[:5]...)
	commit(t, r, "rest", changes[5:]...)
	push(t, r)
	gittest.Git(t, rm.dir, "fsck", "--strict", "--no-progress")

	// The same files committed by the git CLI give the same root tree.
	work := t.TempDir()
	gittest.Git(t, work, "init", "--quiet")
	for _, p := range paths {
		f := filepath.Join(work, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, []byte("content of "+p), 0o644))
	}
	gittest.Git(t, work, "add", "-A")
	assert.Equal(t, gittest.Git(t, work, "write-tree"), gittest.Git(t, rm.dir, "rev-parse", "main^{tree}"))

	for _, p := range paths {
		got, ok, err := r.ReadFile(p)
		require.NoError(t, err)
		require.True(t, ok, p)
		assert.Equal(t, "content of "+p, string(got))
	}
	// Replace a file by a folder of the same name and back; git agrees again.
	commit(t, r, "swap", del("b"), set("b/inner", "i"), del("a.yaml"))
	push(t, r)
	gittest.Git(t, rm.dir, "fsck", "--strict", "--no-progress")
	assert.NotContains(t, gittest.Files(t, rm.dir, "main"), "a.yaml")
	assert.Contains(t, gittest.Files(t, rm.dir, "main"), "b/inner")
}

// mergeEntries and findEntry agree with go-git's own sort on random edits.
func TestMergeEntriesMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "-", ".", "/", "0", "!"}
	name := func() string {
		s := ""
		for n := 1 + rng.IntN(3); n > 0; n-- {
			c := alphabet[rng.IntN(len(alphabet))]
			if c == "/" {
				c = "_"
			}
			s += c
		}
		return s
	}
	entry := func(n string) object.TreeEntry {
		if rng.IntN(2) == 0 {
			return object.TreeEntry{Name: n, Mode: filemode.Dir}
		}
		return object.TreeEntry{Name: n, Mode: filemode.Regular}
	}
	for round := 0; round < 200; round++ {
		byName := map[string]object.TreeEntry{}
		for i := rng.IntN(30); i > 0; i-- {
			n := name()
			byName[n] = entry(n)
		}
		var old []object.TreeEntry
		for _, e := range byName {
			old = append(old, e)
		}
		sort.Sort(object.TreeEntrySorter(old))
		for _, e := range old {
			require.Equal(t, e.Name, old[findEntry(old, e.Name)].Name)
		}

		changes := map[string]*object.TreeEntry{}
		for i := rng.IntN(10); i > 0; i-- {
			n := name()
			if rng.IntN(3) == 0 {
				changes[n] = nil
				delete(byName, n)
			} else {
				e := entry(n)
				changes[n] = &e
				byName[n] = e
			}
		}
		var want []object.TreeEntry
		for _, e := range byName {
			want = append(want, e)
		}
		sort.Sort(object.TreeEntrySorter(want))
		got := mergeEntries(old, changes)
		if len(want) == 0 {
			assert.Empty(t, got)
			continue
		}
		require.Equal(t, want, got, "round %d", round)
	}
}
