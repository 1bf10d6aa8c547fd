package git

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Trees are read and edited in git's own encoding: entries
// "<octal mode> <name>\0<20-byte id>", sorted by name with folders compared
// as if their name ended in "/". Changing one entry of a wide folder then
// costs a scan of its bytes and a copy, not a decode into entries (go-git's
// Tree.Decode allocates several times per entry) and a re-encode.

// rawEntry is one entry of a raw tree, by offsets into the tree's bytes.
type rawEntry struct {
	start, end int // raw[start:end] is the whole entry
	nameStart  int // the name is raw[nameStart : end-hashLen-1]
	mode       filemode.FileMode
}

const hashLen = len(plumbing.ZeroHash)

func (e rawEntry) name(raw []byte) []byte { return raw[e.nameStart : e.end-hashLen-1] }

func (e rawEntry) hash(raw []byte) (h plumbing.Hash) {
	copy(h[:], raw[e.end-hashLen:e.end])
	return h
}

func (e rawEntry) isDir() bool { return e.mode == filemode.Dir }

// parseEntry reads the entry starting at raw[off].
func parseEntry(raw []byte, off int) (rawEntry, error) {
	e := rawEntry{start: off}
	// Modes are 5 ("40000") or 6 digits long; look there before searching.
	var sp int
	switch {
	case off+5 < len(raw) && raw[off+5] == ' ':
		sp = 5
	case off+6 < len(raw) && raw[off+6] == ' ':
		sp = 6
	default:
		sp = bytes.IndexByte(raw[off:min(off+8, len(raw))], ' ')
		if sp <= 0 {
			return e, fmt.Errorf("git: malformed tree entry at byte %d", off)
		}
	}
	var mode uint32
	for _, c := range raw[off : off+sp] {
		if c < '0' || c > '7' {
			return e, fmt.Errorf("git: malformed tree entry mode at byte %d", off)
		}
		mode = mode<<3 | uint32(c-'0')
	}
	e.mode = filemode.FileMode(mode)
	e.nameStart = off + sp + 1
	nul := bytes.IndexByte(raw[e.nameStart:], 0)
	if nul <= 0 {
		return e, fmt.Errorf("git: malformed tree entry name at byte %d", off)
	}
	e.end = e.nameStart + nul + 1 + hashLen
	if e.end > len(raw) {
		return e, fmt.Errorf("git: truncated tree entry at byte %d", off)
	}
	return e, nil
}

// eachEntry calls fn for every entry of raw, in order, until fn returns false.
func eachEntry(raw []byte, fn func(rawEntry) bool) error {
	for off := 0; off < len(raw); {
		e, err := parseEntry(raw, off)
		if err != nil {
			return err
		}
		if !fn(e) {
			return nil
		}
		off = e.end
	}
	return nil
}

// cmpKey compares two entries' sort keys (name, plus "/" for a folder) byte
// by byte, without building the keys.
func cmpKey[A, B ~string | ~[]byte](a A, aDir bool, b B, bDir bool) int {
	la, lb := len(a), len(b)
	if aDir {
		la++
	}
	if bDir {
		lb++
	}
	for i := 0; i < la && i < lb; i++ {
		ca, cb := byte('/'), byte('/')
		if i < len(a) {
			ca = a[i]
		}
		if i < len(b) {
			cb = b[i]
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

// rawTree is a tree's bytes being looked up by name. A few lookups scan the
// bytes; many (a resync writing a whole folder) build an index once and
// binary-search it, so neither case costs more than it must.
type rawTree struct {
	raw     []byte
	scans   int
	index   []rawEntry
	indexed bool
}

// scansBeforeIndex: past this many lookups, indexing the tree is cheaper.
const scansBeforeIndex = 4

// find returns the entry called name (a file or a folder).
func (t *rawTree) find(name string) (rawEntry, bool, error) {
	if !t.indexed && t.scans >= scansBeforeIndex {
		if err := eachEntry(t.raw, func(e rawEntry) bool { t.index = append(t.index, e); return true }); err != nil {
			return rawEntry{}, false, err
		}
		t.indexed = true
	}
	if t.indexed {
		for _, dir := range []bool{false, true} {
			i := sort.Search(len(t.index), func(i int) bool {
				e := t.index[i]
				return cmpKey(e.name(t.raw), e.isDir(), name, dir) >= 0
			})
			if i < len(t.index) && string(t.index[i].name(t.raw)) == name && t.index[i].isDir() == dir {
				return t.index[i], true, nil
			}
		}
		return rawEntry{}, false, nil
	}
	t.scans++
	for off := 0; off < len(t.raw); {
		e, err := parseEntry(t.raw, off)
		if err != nil {
			return rawEntry{}, false, err
		}
		n := e.name(t.raw)
		if string(n) == name {
			return e, true, nil
		}
		// Sorted: past name's folder key, name cannot come any more.
		if cmpKey(n, e.isDir(), name, true) > 0 {
			break
		}
		off = e.end
	}
	return rawEntry{}, false, nil
}

// newEntry is an entry to write into a tree.
type newEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
}

func (e newEntry) isDir() bool { return e.mode == filemode.Dir }

func appendEntry(buf []byte, e newEntry) []byte {
	buf = strconv.AppendUint(buf, uint64(e.mode), 8)
	buf = append(buf, ' ')
	buf = append(buf, e.name...)
	buf = append(buf, 0)
	return append(buf, e.hash[:]...)
}

// spliceTree returns raw without the entries in drop (entries of raw) and
// with the entries in add, in git order. add must not hold names that stay in
// the result.
func spliceTree(raw []byte, drop []rawEntry, add []newEntry) ([]byte, error) {
	slices.SortFunc(drop, func(a, b rawEntry) int { return a.start - b.start })
	slices.SortFunc(add, func(a, b newEntry) int { return cmpKey(a.name, a.isDir(), b.name, b.isDir()) })
	size := len(raw)
	for _, e := range add {
		size += 7 + len(e.name) + 1 + hashLen
	}
	out := make([]byte, 0, size)
	run := 0 // raw[run:] is not yet copied or skipped

	if replacesInPlace(raw, drop, add) {
		// The common case, a changed file or subfolder: each new entry goes
		// where the old one was, so no scan is needed to place it.
		for i, d := range drop {
			out = append(out, raw[run:d.start]...)
			out = appendEntry(out, add[i])
			run = d.end
		}
		return append(out, raw[run:]...), nil
	}

	err := eachEntry(raw, func(e rawEntry) bool {
		for len(add) > 0 && cmpKey(add[0].name, add[0].isDir(), e.name(raw), e.isDir()) < 0 {
			out = append(out, raw[run:e.start]...)
			run = e.start
			out = appendEntry(out, add[0])
			add = add[1:]
		}
		if len(drop) > 0 && drop[0].start == e.start {
			out = append(out, raw[run:e.start]...)
			run = e.end
			drop = drop[1:]
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(drop) > 0 {
		return nil, fmt.Errorf("git: splice: no entry at byte %d", drop[0].start)
	}
	out = append(out, raw[run:]...)
	for _, e := range add {
		out = appendEntry(out, e)
	}
	return out, nil
}

// replacesInPlace reports whether add, sorted, replaces drop, sorted, one for
// one with the same sort keys (same name, both files or both folders).
func replacesInPlace(raw []byte, drop []rawEntry, add []newEntry) bool {
	if len(drop) != len(add) {
		return false
	}
	for i, d := range drop {
		if d.isDir() != add[i].isDir() || string(d.name(raw)) != add[i].name {
			return false
		}
	}
	return true
}
