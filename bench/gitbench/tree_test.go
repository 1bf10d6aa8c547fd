package gitbench

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The commit profile shows object.Tree.Decode as what grows with the
// repository: every commit decodes each tree on the changed path, and the
// wide ones (one entry per namespace, one per object) cost per entry. These
// benchmarks measure, on the same tree, go-git's decoder against the two
// cheaper ways a fix in pkg/git could take (see bench/FINDINGS.md): a
// one-pass parser of the raw bytes, and editing the raw bytes in place
// without decoding at all. Hashing the new tree is the floor either way.

// treeObject encodes a tree of n entries like a mirror folder's.
func treeObject(n int) (*plumbing.MemoryObject, []byte) {
	var raw []byte
	for i := 0; i < n; i++ {
		raw = append(raw, "100644 "...)
		raw = append(raw, fmt.Sprintf("obj-%05d.yaml", i)...)
		raw = append(raw, 0)
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(fmt.Sprint(i)))
		raw = append(raw, h[:]...)
	}
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.TreeObject)
	_, _ = o.Write(raw)
	return o, raw
}

// parseTree is a one-pass decoder of git's tree format
// ("<octal mode> <name>\0<20-byte id>" repeated).
func parseTree(raw []byte, entries []object.TreeEntry) ([]object.TreeEntry, error) {
	entries = entries[:0]
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("malformed tree")
		}
		var mode uint32
		for _, c := range raw[:sp] {
			mode = mode<<3 | uint32(c-'0')
		}
		raw = raw[sp+1:]
		nul := bytes.IndexByte(raw, 0)
		if nul < 0 || len(raw) < nul+21 {
			return nil, fmt.Errorf("malformed tree")
		}
		e := object.TreeEntry{Name: string(raw[:nul]), Mode: filemode.FileMode(mode)}
		copy(e.Hash[:], raw[nul+1:nul+21])
		entries = append(entries, e)
		raw = raw[nul+21:]
	}
	return entries, nil
}

// spliceTree replaces the id of entry name in raw, without decoding: the scan
// only compares names.
func spliceTree(raw []byte, name string, id plumbing.Hash) bool {
	for off := 0; off < len(raw); {
		sp := bytes.IndexByte(raw[off:], ' ')
		nul := bytes.IndexByte(raw[off+sp:], 0)
		start := off + sp + 1
		end := off + sp + nul
		if string(raw[start:end]) == name {
			copy(raw[end+1:end+21], id[:])
			return true
		}
		off = end + 21
	}
	return false
}

func BenchmarkTreeRead(b *testing.B) {
	for _, n := range []int{1, 50, 250, 5000} {
		o, raw := treeObject(n)
		name := fmt.Sprintf("obj-%05d.yaml", n/2)
		id := plumbing.ComputeHash(plumbing.BlobObject, []byte("new"))
		b.Run(fmt.Sprintf("gogit-decode/entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var t object.Tree
				if err := t.Decode(o); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("one-pass-parse/entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var entries []object.TreeEntry
			for i := 0; i < b.N; i++ {
				var err error
				if entries, err = parseTree(raw, entries); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("splice-raw/entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			buf := append([]byte(nil), raw...)
			for i := 0; i < b.N; i++ {
				if !spliceTree(buf, name, id) {
					b.Fatal("entry not found")
				}
			}
		})
		b.Run(fmt.Sprintf("hash-new-tree/entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = plumbing.ComputeHash(plumbing.TreeObject, raw)
			}
		})
	}
}
