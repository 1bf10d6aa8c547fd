package git

import (
	"slices"
	"sort"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Tree entries are kept in git's order: by name, folders compared as if their
// name ended in "/". The helpers below work on that sorted slice without
// allocating sort keys, so editing a wide folder costs one pass over it
// instead of a map and a sort.

// cmpKey compares an entry's sort key with (name, dir)'s, byte by byte.
func cmpKey(aName string, aDir bool, bName string, bDir bool) int {
	la, lb := len(aName), len(bName)
	if aDir {
		la++
	}
	if bDir {
		lb++
	}
	for i := 0; i < la && i < lb; i++ {
		ca, cb := byte('/'), byte('/')
		if i < len(aName) {
			ca = aName[i]
		}
		if i < len(bName) {
			cb = bName[i]
		}
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	return la - lb
}

func cmpEntries(a, b object.TreeEntry) int {
	return cmpKey(a.Name, a.Mode == filemode.Dir, b.Name, b.Mode == filemode.Dir)
}

// findEntry returns the index of the entry called name (file or folder) in
// sorted entries, or -1.
func findEntry(entries []object.TreeEntry, name string) int {
	for _, dir := range []bool{false, true} {
		i := sort.Search(len(entries), func(i int) bool {
			e := &entries[i]
			return cmpKey(e.Name, e.Mode == filemode.Dir, name, dir) >= 0
		})
		if i < len(entries) && entries[i].Name == name && (entries[i].Mode == filemode.Dir) == dir {
			return i
		}
	}
	return -1
}

// mergeEntries returns sorted entries with each name in changes replaced by
// its new entry, or removed when the new entry is nil.
func mergeEntries(entries []object.TreeEntry, changes map[string]*object.TreeEntry) []object.TreeEntry {
	drop := make(map[int]bool, len(changes))
	added := make([]object.TreeEntry, 0, len(changes))
	for name, e := range changes {
		if i := findEntry(entries, name); i >= 0 {
			drop[i] = true
		}
		if e != nil {
			added = append(added, *e)
		}
	}
	slices.SortFunc(added, cmpEntries)

	out := make([]object.TreeEntry, 0, len(entries)-len(drop)+len(added))
	j := 0
	for i, e := range entries {
		if drop[i] {
			continue
		}
		for j < len(added) && cmpEntries(added[j], e) < 0 {
			out = append(out, added[j])
			j++
		}
		out = append(out, e)
	}
	return append(out, added[j:]...)
}

// encodeTree writes sorted entries in git's tree format ("<octal mode> <name>\0<hash>").
func encodeTree(o plumbing.EncodedObject, entries []object.TreeEntry) error {
	buf := make([]byte, 0, len(entries)*(len(plumbing.ZeroHash)+24))
	for _, e := range entries {
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Hash[:]...)
	}
	o.SetType(plumbing.TreeObject)
	o.SetSize(int64(len(buf)))
	w, err := o.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write(buf); err != nil {
		return err
	}
	return w.Close()
}
