package git

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
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

// spliceTree and rawTree.find agree with go-git's own sort and encoding on
// random edits, looking names up both by scanning and through the index.
func TestSpliceTreeMatchesGoGit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "-", ".", "_", "0", "!"}
	name := func() string {
		s := ""
		for n := 1 + rng.IntN(3); n > 0; n-- {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		return s
	}
	entry := func(n string) object.TreeEntry {
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(n+strconv.Itoa(rng.IntN(1000))))
		if rng.IntN(2) == 0 {
			return object.TreeEntry{Name: n, Mode: filemode.Dir, Hash: h}
		}
		return object.TreeEntry{Name: n, Mode: filemode.Regular, Hash: h}
	}
	encode := func(byName map[string]object.TreeEntry) []byte {
		tr := &object.Tree{}
		for _, e := range byName {
			tr.Entries = append(tr.Entries, e)
		}
		sort.Sort(object.TreeEntrySorter(tr.Entries))
		o := &plumbing.MemoryObject{}
		require.NoError(t, tr.Encode(o))
		raw, err := io.ReadAll(must(o.Reader()))
		require.NoError(t, err)
		return raw
	}
	for round := 0; round < 300; round++ {
		byName := map[string]object.TreeEntry{}
		for i := rng.IntN(30); i > 0; i-- {
			n := name()
			byName[n] = entry(n)
		}
		raw := encode(byName)
		scanned, indexed := &rawTree{raw: raw}, &rawTree{raw: raw, scans: scansBeforeIndex}
		for n, want := range byName {
			for _, tr := range []*rawTree{scanned, indexed} {
				e, ok, err := tr.find(n)
				require.NoError(t, err)
				require.True(t, ok, "round %d: %q", round, n)
				assert.Equal(t, n, string(e.name(raw)))
				assert.Equal(t, want.Mode, e.mode)
				assert.Equal(t, want.Hash, e.hash(raw))
			}
		}
		_, ok, err := indexed.find("absent")
		require.NoError(t, err)
		require.False(t, ok)

		var drop []rawEntry
		var add []newEntry
		changed := map[string]bool{}
		for i := rng.IntN(10); i > 0; i-- {
			n := name()
			if changed[n] {
				continue
			}
			changed[n] = true
			if e, ok, err := scanned.find(n); err == nil && ok {
				drop = append(drop, e)
			}
			if rng.IntN(3) == 0 {
				delete(byName, n)
				continue
			}
			e := entry(n)
			if old, ok := byName[n]; ok && rng.IntN(2) == 0 {
				e.Mode = old.Mode // a replacement in place, the common case
			}
			byName[n] = e
			add = append(add, newEntry{name: n, mode: e.Mode, hash: e.Hash})
		}
		got, err := spliceTree(raw, drop, add)
		require.NoError(t, err)
		assert.Equal(t, encode(byName), got, "round %d", round)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A corrupt tree is an error, never a panic or a wrong entry.
func TestMalformedTree(t *testing.T) {
	good := appendEntry(nil, newEntry{name: "a", mode: filemode.Regular, hash: plumbing.ComputeHash(plumbing.BlobObject, nil)})
	for name, raw := range map[string][]byte{
		"truncated id": good[:len(good)-1],
		"no name end":  []byte("100644 abc"),
		"no mode":      []byte(" a\x00"),
		"bad mode":     append([]byte("10x644"), good[6:]...),
		"empty name":   append([]byte("100644 "), good[8:]...),
	} {
		t.Run(name, func(t *testing.T) {
			tr := &rawTree{raw: raw}
			_, _, err := tr.find("a")
			assert.Error(t, err)
			_, err = spliceTree(raw, nil, []newEntry{{name: "b", mode: filemode.Regular}})
			assert.Error(t, err)
		})
	}
}
