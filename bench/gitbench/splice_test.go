package gitbench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// A prototype of the fix bench/FINDINGS.md proposes for pkg/git, to show its
// effect in the same run as the code it would replace: commit one modified
// file by replacing 20 bytes (the entry's id) in the raw bytes of each tree on
// the path, never decoding a tree. Only modifications of existing files are
// handled, which is what the benchmark does; a real fix also splices entries
// in and out for adds and deletes.

// spliceCommitTree returns the tree `id` with the file at segs set to blob, writing
// every new tree to st.
func spliceCommitTree(st *memory.Storage, id plumbing.Hash, segs []string, blob plumbing.Hash) (plumbing.Hash, error) {
	o, err := st.EncodedObject(plumbing.TreeObject, id)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	rd, err := o.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	raw := make([]byte, o.Size()) // the copy the new tree is made of
	if _, err := io.ReadFull(rd, raw); err != nil {
		return plumbing.ZeroHash, err
	}
	at := findID(raw, segs[0])
	if at < 0 {
		return plumbing.ZeroHash, fmt.Errorf("%s not found", segs[0])
	}
	next := blob
	if len(segs) > 1 {
		var sub plumbing.Hash
		copy(sub[:], raw[at:at+20])
		if next, err = spliceCommitTree(st, sub, segs[1:], blob); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	copy(raw[at:at+20], next[:])
	return store(st, plumbing.TreeObject, raw)
}

// findID returns the offset of entry name's id in a raw tree, or -1.
func findID(raw []byte, name string) int {
	for off := 0; off < len(raw); {
		sp := bytes.IndexByte(raw[off:], ' ')
		nul := bytes.IndexByte(raw[off+sp:], 0)
		if sp < 0 || nul < 0 {
			return -1
		}
		end := off + sp + nul
		if string(raw[off+sp+1:end]) == name {
			return end + 1
		}
		off = end + 21
	}
	return -1
}

func BenchmarkSpliceCommitOneFile(b *testing.B) {
	for _, n := range sizes() {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			st, tip := loadFixture(b, bareRepo(b, n))
			c, err := object.GetCommit(st, tip)
			if err != nil {
				b.Fatal(err)
			}
			tree := c.TreeHash
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ch := nextEdit(n)
				bh, err := store(st, plumbing.BlobObject, ch.Content)
				if err != nil {
					b.Fatal(err)
				}
				if tree, err = spliceCommitTree(st, tree, strings.Split(ch.Path, "/"), bh); err != nil {
					b.Fatal(err)
				}
				when := time.Now()
				commit := &object.Commit{
					Author:       object.Signature{Name: author.Name, Email: author.Email, When: when},
					Committer:    object.Signature{Name: bot.Name, Email: bot.Email, When: when},
					Message:      "edit",
					TreeHash:     tree,
					ParentHashes: []plumbing.Hash{tip},
				}
				o := st.NewEncodedObject()
				if err := commit.Encode(o); err != nil {
					b.Fatal(err)
				}
				if tip, err = st.SetEncodedObject(o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// loadFixture reads the fixture's packs (fast-import wrote them) into memory
// storage and returns main's commit, as git.Open's fetch would.
func loadFixture(b *testing.B, dir string) (*memory.Storage, plumbing.Hash) {
	st := memory.NewStorage()
	packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	for _, p := range packs {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		err = packfile.UpdateObjectStorage(st, f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	out, err := exec.Command("git", "--git-dir", dir, "rev-parse", "refs/heads/main").Output()
	if err != nil {
		b.Fatal(err)
	}
	return st, plumbing.NewHash(strings.TrimSpace(string(out)))
}

// store writes one object of type t with content into st.
func store(st *memory.Storage, t plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	o := st.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(content)))
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(o)
}
