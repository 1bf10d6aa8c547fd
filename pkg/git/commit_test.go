package git

import (
	"context"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitsave/gitsave/pkg/git/gittest"
)

// setups run the same round trip against each storage/transport pair.
var setups = []struct {
	name   string
	remote func(testing.TB) remote
	onDisk bool
}{
	{"memory+local-path", localRemote, false},
	{"disk-cache+http", httpRemote, true},
}

func TestRoundTrip(t *testing.T) {
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			rm := s.remote(t)
			cache := ""
			if s.onDisk {
				cache = t.TempDir()
			}
			r := rm.open(t, cache)
			require.True(t, r.Tip().IsZero(), "unborn remote")
			require.True(t, r.RemoteTip().IsZero())
			files, err := r.ListFiles("")
			require.NoError(t, err)
			assert.Empty(t, files)

			res := commit(t, r, "first",
				set("ns1/ConfigMap/a.yaml", "a: 1\n"),
				set("ns1/ConfigMap/b.yaml", "b: 1\n"),
				set("ns2/Secret/c.yaml", "c: 1\n"),
				set("README.md", "hello\n"))
			require.True(t, res.Changed)
			assert.Equal(t, 4, res.FilesChanged)
			// 4 blobs, trees: root, ns1, ns1/ConfigMap, ns2, ns2/Secret; commit.
			assert.Equal(t, 4+5+1, res.ObjectsWritten)
			assert.Equal(t, res.SHA, r.Tip())
			assert.True(t, r.RemoteTip().IsZero(), "not pushed yet")

			got, ok, err := r.ReadFile("ns1/ConfigMap/a.yaml")
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, "a: 1\n", string(got))
			_, ok, err = r.ReadFile("ns1/ConfigMap/missing.yaml")
			require.NoError(t, err)
			assert.False(t, ok)
			_, ok, err = r.ReadFile("ns1/ConfigMap")
			require.NoError(t, err)
			assert.False(t, ok, "a folder is not a file")

			files, err = r.ListFiles("ns1")
			require.NoError(t, err)
			assert.Equal(t, map[string]plumbing.Hash{
				"ns1/ConfigMap/a.yaml": BlobHash([]byte("a: 1\n")),
				"ns1/ConfigMap/b.yaml": BlobHash([]byte("b: 1\n")),
			}, files)
			files, err = r.ListFiles("")
			require.NoError(t, err)
			assert.Len(t, files, 4)
			files, err = r.ListFiles("nope/")
			require.NoError(t, err)
			assert.Empty(t, files)

			push(t, r)
			assert.Equal(t, r.Tip(), r.RemoteTip())
			assert.Equal(t, r.Tip().String(), gittest.Head(t, rm.dir, "main"))
			content, ok := gittest.ShowFile(t, rm.dir, "main", "ns2/Secret/c.yaml")
			require.True(t, ok)
			assert.Equal(t, "c: 1\n", string(content))

			// Update one, delete the only file of a folder chain, add one.
			res = commit(t, r, "second",
				set("ns1/ConfigMap/a.yaml", "a: 2\n"),
				del("ns2/Secret/c.yaml"),
				del("ns2/Secret/never-existed.yaml"),
				set("ns1/ConfigMap/b.yaml", "b: 1\n"), // unchanged
				set("ns3/x.yaml", ""))
			require.True(t, res.Changed)
			assert.Equal(t, 3, res.FilesChanged)
			push(t, r)
			assert.Equal(t, []string{"README.md", "ns1/ConfigMap/a.yaml", "ns1/ConfigMap/b.yaml", "ns3/x.yaml"},
				gittest.Files(t, rm.dir, "main"), "ns2 and ns2/Secret are gone with their last file")
			log := gittest.Log(t, rm.dir, "main")
			require.Len(t, log, 2)
			assert.Equal(t, []string{log[1].SHA}, log[0].Parents)
			assert.Equal(t, "jane <jane@users.noreply.gitsave.dev>", log[0].Author)
			assert.Equal(t, "gitsave <gitsave@gitsave.dev>", log[0].Committer)
			gittest.Git(t, rm.dir, "fsck", "--strict", "--no-progress")

			// A fresh Open (from the cache when on disk) sees the same tip.
			r2 := rm.open(t, cache)
			assert.Equal(t, r.Tip(), r2.Tip())
			got, ok, err = r2.ReadFile("ns1/ConfigMap/a.yaml")
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, "a: 2\n", string(got))
		})
	}
}

func TestCommitWithoutDiff(t *testing.T) {
	r := localRemote(t).open(t, "")
	first := commit(t, r, "first", set("a/b.yaml", "x"))

	for name, changes := range map[string][]Change{
		"same content":       {set("a/b.yaml", "x")},
		"delete missing":     {del("a/c.yaml"), del("z/z.yaml")},
		"no changes":         nil,
		"set then reset":     {set("a/b.yaml", "y"), set("a/b.yaml", "x")},
		"delete below file":  {del("a/b.yaml/c")},
		"add then delete":    {set("n/new.yaml", "1"), del("n/new.yaml")},
		"unchanged and none": {set("a/b.yaml", "x"), del("q")},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := r.Commit(changes, jane, bot, when, "nothing")
			require.NoError(t, err)
			assert.False(t, res.Changed)
			assert.Zero(t, res.FilesChanged)
			assert.Zero(t, res.ObjectsWritten)
			assert.Equal(t, first.SHA, res.SHA)
			assert.Equal(t, first.SHA, r.Tip(), "no ref move")
		})
	}
}

func TestCommitOnUnbornWithNothing(t *testing.T) {
	r := localRemote(t).open(t, "")
	res, err := r.Commit([]Change{del("a")}, jane, bot, when, "m")
	require.NoError(t, err)
	assert.False(t, res.Changed)
	assert.True(t, r.Tip().IsZero())
}

func TestDeleteEverythingLeavesEmptyTree(t *testing.T) {
	rm := localRemote(t)
	r := rm.open(t, "")
	commit(t, r, "add", set("a/b/c.yaml", "1"))
	res := commit(t, r, "remove", del("a/b/c.yaml"))
	require.True(t, res.Changed)
	assert.Equal(t, 2, res.ObjectsWritten, "empty root tree + commit")
	files, err := r.ListFiles("")
	require.NoError(t, err)
	assert.Empty(t, files)
	push(t, r)
	assert.Empty(t, gittest.Files(t, rm.dir, "main"))
}

func TestMessageByteExact(t *testing.T) {
	rm := httpRemote(t)
	r := rm.open(t, "")
	messages := []string{
		"Ünïcödé ✓ — 日本語 subject\n\nbody line 1\n  indented line\n\ttab\n\n\nafter blank lines",
		"no trailing newline",
		"trailing newlines\n\n\n",
		WithTrailers("Save from UI", [2]string{"Commit-Request", "ns/req-1"}, [2]string{"Commit-Request-UID", "1234"}),
	}
	for i, m := range messages {
		commit(t, r, m, set("f.txt", string(rune('a'+i))))
	}
	push(t, r)
	log := gittest.Log(t, rm.dir, "main")
	require.Len(t, log, len(messages))
	for i, m := range messages {
		assert.Equal(t, m, log[len(log)-1-i].Message)
	}
	// git itself parses the trailers.
	assert.Equal(t, "Commit-Request: ns/req-1\nCommit-Request-UID: 1234",
		gittest.Git(t, rm.dir, "log", "-1", "--format=%(trailers:only,unfold)", "main"))
}

func TestWithTrailers(t *testing.T) {
	kv := [2]string{"Commit-Request", "ns/a"}
	for msg, want := range map[string]string{
		"subject":                         "subject\n\nCommit-Request: ns/a\n",
		"subject\n":                       "subject\n\nCommit-Request: ns/a\n",
		"Fix: colon subject":              "Fix: colon subject\n\nCommit-Request: ns/a\n",
		"subject\n\nbody text":            "subject\n\nbody text\n\nCommit-Request: ns/a\n",
		"subject\n\nSigned-off-by: x <y>": "subject\n\nSigned-off-by: x <y>\nCommit-Request: ns/a\n",
		"":                                "Commit-Request: ns/a\n",
	} {
		assert.Equal(t, want, WithTrailers(msg, kv), "message %q", msg)
	}
	assert.Equal(t, "s", WithTrailers("s"))
	assert.Equal(t, "s\n\nK: multi line\n", WithTrailers("s", [2]string{"K", "multi\nline"}))
}

func TestCommitErrors(t *testing.T) {
	r := localRemote(t).open(t, "")
	commit(t, r, "first", set("dir/file.yaml", "1"))
	tip := r.Tip()
	for name, c := range map[string][]Change{
		"empty path":         {set("", "x")},
		"absolute":           {set("/a", "x")},
		"dotdot":             {set("a/../b", "x")},
		"double slash":       {set("a//b", "x")},
		"dot git":            {set("a/.git/config", "x")},
		"both set+delete":    {{Path: "a", Content: []byte("x"), Delete: true}},
		"neither":            {{Path: "a"}},
		"file over folder":   {set("dir", "x")},
		"folder over file":   {set("dir/file.yaml/x", "x")},
		"delete folder":      {del("dir")},
		"partial then error": {set("ok.yaml", "fine"), set("dir", "x")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.Commit(c, jane, bot, when, "m")
			assert.Error(t, err)
			assert.Equal(t, tip, r.Tip())
		})
	}
	_, err := r.Commit([]Change{set("x", "1")}, Identity{Email: "a@b"}, bot, when, "m")
	assert.ErrorContains(t, err, "author name is empty")

	// Replacing a file by a folder works when the batch deletes the file first.
	res := commit(t, r, "file to folder", del("dir/file.yaml"), set("dir/file.yaml/inner", "1"))
	assert.True(t, res.Changed)
	files, err := r.ListFiles("dir")
	require.NoError(t, err)
	assert.Equal(t, []string{"dir/file.yaml/inner"}, keys(files))
}

func TestIdentitySanitized(t *testing.T) {
	rm := localRemote(t)
	r := rm.open(t, "")
	_, err := r.Commit([]Change{set("a", "1")}, Identity{Name: " Evil <x>\nName ", Email: "<e@x>"}, bot, when, "m")
	require.NoError(t, err)
	push(t, r)
	assert.Equal(t, "Evil xName <e@x>", gittest.Log(t, rm.dir, "main")[0].Author)
	gittest.Git(t, rm.dir, "fsck", "--strict", "--no-progress")
}

func TestResetToRemoteDropsUnpushed(t *testing.T) {
	rm := localRemote(t)
	r := rm.open(t, "")
	commit(t, r, "pushed", set("a", "1"))
	push(t, r)
	pushed := r.Tip()
	commit(t, r, "dropped", set("a", "2"))
	r.ResetToRemote()
	assert.Equal(t, pushed, r.Tip())
	got, _, err := r.ReadFile("a")
	require.NoError(t, err)
	assert.Equal(t, "1", string(got))

	// The same content again: its blob is already stored, but it must still be sent.
	res := commit(t, r, "replayed", set("a", "2"))
	assert.Equal(t, 3, res.ObjectsWritten)
	_, err = r.Push(context.Background())
	require.NoError(t, err)
	gittest.Git(t, rm.dir, "fsck", "--strict", "--no-progress")
}

func keys(m map[string]plumbing.Hash) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
