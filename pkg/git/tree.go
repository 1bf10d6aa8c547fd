package git

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// splitPath checks a repository path (relative, slash-separated, no "." or ".."
// or ".git" segments) and returns its segments.
func splitPath(p string) ([]string, error) {
	if p == "" {
		return nil, fmt.Errorf("git: empty path")
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		switch {
		case s == "", s == ".", s == "..":
			return nil, fmt.Errorf("git: invalid path %q: empty, . or .. segment", p)
		case strings.EqualFold(s, ".git"):
			return nil, fmt.Errorf("git: invalid path %q: .git segment", p)
		case strings.IndexByte(s, 0) >= 0:
			return nil, fmt.Errorf("git: invalid path %q: NUL byte", p)
		}
	}
	return segs, nil
}

// dirChanges is the set of changes below one directory, grouped so that each
// directory on a changed path is visited once.
type dirChanges struct {
	files map[string]*Change
	dirs  map[string]*dirChanges
}

// groupChanges validates the paths and groups them by directory; for a path
// given twice, the last change wins.
func groupChanges(changes []Change) (*dirChanges, error) {
	root := &dirChanges{}
	for i := range changes {
		c := &changes[i]
		if c.Delete == (c.Content != nil) {
			return nil, fmt.Errorf("git: change %q: set exactly one of Content and Delete", c.Path)
		}
		segs, err := splitPath(c.Path)
		if err != nil {
			return nil, err
		}
		d := root
		for _, s := range segs[:len(segs)-1] {
			if d.dirs == nil {
				d.dirs = make(map[string]*dirChanges)
			}
			next := d.dirs[s]
			if next == nil {
				next = &dirChanges{}
				d.dirs[s] = next
			}
			d = next
		}
		if d.files == nil {
			d.files = make(map[string]*Change)
		}
		d.files[segs[len(segs)-1]] = c
	}
	return root, nil
}

// treeBuilder applies grouped changes to a tree, collecting the new objects it
// creates (not yet recorded) so a failed Commit leaves the Repo untouched.
type treeBuilder struct {
	objs         *objects
	created      []*rawObject
	filesChanged int
}

func (b *treeBuilder) add(o *rawObject) plumbing.Hash {
	b.created = append(b.created, o)
	return o.Hash()
}

// edit is what happens to one name of a folder: its current entry (if any)
// goes, and next (if any) takes its place.
type edit struct {
	old     rawEntry
	hadOld  bool
	next    *newEntry
	changed bool
}

// apply returns the hash of tree `old` (zero: no tree) after the changes in d,
// or zero if the result is empty. Only trees whose content changes are built,
// each by splicing the changed entries into the old tree's bytes.
func (b *treeBuilder) apply(old plumbing.Hash, d *dirChanges, dir string) (plumbing.Hash, error) {
	t := &rawTree{}
	if !old.IsZero() {
		raw, err := b.objs.tree(old)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("git: read tree %q: %w", dir, err)
		}
		t.raw = raw
	}
	edits := map[string]*edit{}
	// current is the entry name has now, after the edits decided so far.
	current := func(name string) (*edit, error) {
		if e, ok := edits[name]; ok {
			return e, nil
		}
		e, ok, err := t.find(name)
		if err != nil {
			return nil, fmt.Errorf("git: tree %q: %w", dir, err)
		}
		ed := &edit{old: e, hadOld: ok}
		if ok {
			ed.next = &newEntry{name: name, mode: e.mode, hash: e.hash(t.raw)}
		}
		edits[name] = ed
		return ed, nil
	}

	// Files first, so deleting file "x" and creating "x/y" in one batch works.
	for name, c := range d.files {
		e, err := current(name)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if e.next != nil && e.next.isDir() {
			return plumbing.ZeroHash, fmt.Errorf("git: %s: is a directory", c.Path)
		}
		if c.Delete {
			if e.next != nil {
				e.next, e.changed = nil, true
				b.filesChanged++
			}
			continue
		}
		h := BlobHash(c.Content)
		if e.next != nil && e.next.hash == h && e.next.mode.IsFile() {
			continue
		}
		mode := filemode.Regular
		if e.next != nil && e.next.mode == filemode.Executable {
			mode = filemode.Executable
		}
		// A copy: the object outlives the caller's slice.
		b.add(&rawObject{typ: plumbing.BlobObject, data: slices.Clone(c.Content), hash: h})
		e.next, e.changed = &newEntry{name: name, mode: mode, hash: h}, true
		b.filesChanged++
	}

	for name, sub := range d.dirs {
		path := joinPath(dir, name)
		e, err := current(name)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		var oldSub plumbing.Hash
		if e.next != nil && e.next.isDir() {
			oldSub = e.next.hash
		}
		newSub, err := b.apply(oldSub, sub, path)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch {
		case e.next != nil && !e.next.isDir():
			// Only deletes below a file: nothing to do. Anything else would
			// silently replace the file with a folder.
			if !newSub.IsZero() {
				return plumbing.ZeroHash, fmt.Errorf("git: %s: is a file, cannot hold files", path)
			}
		case newSub == oldSub:
		case newSub.IsZero():
			e.next, e.changed = nil, true // the folder became empty: git has no empty folders
		default:
			e.next, e.changed = &newEntry{name: name, mode: filemode.Dir, hash: newSub}, true
		}
	}

	var drop []rawEntry
	var add []newEntry
	for _, e := range edits {
		if !e.changed {
			continue
		}
		if e.hadOld {
			drop = append(drop, e.old)
		}
		if e.next != nil {
			add = append(add, *e.next)
		}
	}
	if len(drop) == 0 && len(add) == 0 {
		return old, nil
	}
	raw, err := spliceTree(t.raw, drop, add)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git: tree %q: %w", dir, err)
	}
	if len(raw) == 0 {
		return plumbing.ZeroHash, nil
	}
	return b.add(newRawObject(plumbing.TreeObject, raw)), nil
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// lookup finds the entry at path in tree root. Not found is (zero, false, nil).
func (r *Repo) lookup(root plumbing.Hash, segs []string) (newEntry, bool, error) {
	cur := newEntry{mode: filemode.Dir, hash: root}
	for _, s := range segs {
		if !cur.isDir() || cur.hash.IsZero() {
			return newEntry{}, false, nil
		}
		raw, err := r.objs.tree(cur.hash)
		if err != nil {
			return newEntry{}, false, err
		}
		t := rawTree{raw: raw}
		e, ok, err := t.find(s)
		if err != nil || !ok {
			return newEntry{}, false, err
		}
		cur = newEntry{name: s, mode: e.mode, hash: e.hash(raw)}
	}
	return cur, true, nil
}

// ReadFile returns the content of a file at Tip. A missing file (or a folder)
// is (nil, false, nil). The caller must not modify the content.
func (r *Repo) ReadFile(path string) ([]byte, bool, error) {
	segs, err := splitPath(path)
	if err != nil {
		return nil, false, err
	}
	e, ok, err := r.lookup(r.tipTree, segs)
	if err != nil || !ok || !e.mode.IsFile() {
		return nil, false, err
	}
	blob, err := r.objs.read(plumbing.BlobObject, e.hash)
	if err != nil {
		return nil, false, fmt.Errorf("git: read %s: %w", path, err)
	}
	return blob.data, true, nil
}

// ListFiles returns every file under the folder prefix ("" for the whole tree)
// at Tip, keyed by repository path, with blob hashes to compare against
// BlobHash without reading contents. A missing folder gives an empty map.
func (r *Repo) ListFiles(prefix string) (map[string]plumbing.Hash, error) {
	prefix = strings.Trim(prefix, "/")
	out := map[string]plumbing.Hash{}
	root := newEntry{mode: filemode.Dir, hash: r.tipTree}
	if prefix != "" {
		segs, err := splitPath(prefix)
		if err != nil {
			return nil, err
		}
		e, ok, err := r.lookup(r.tipTree, segs)
		if err != nil || !ok {
			return out, err
		}
		root = e
	}
	if !root.isDir() || root.hash.IsZero() {
		return out, nil
	}
	return out, r.walk(root.hash, prefix, out)
}

func (r *Repo) walk(tree plumbing.Hash, dir string, out map[string]plumbing.Hash) error {
	raw, err := r.objs.tree(tree)
	if err != nil {
		return fmt.Errorf("git: read tree %q: %w", dir, err)
	}
	var werr error
	err = eachEntry(raw, func(e rawEntry) bool {
		p := joinPath(dir, string(e.name(raw)))
		switch {
		case e.isDir():
			werr = r.walk(e.hash(raw), p, out)
		case e.mode.IsFile():
			out[p] = e.hash(raw)
		}
		return werr == nil
	})
	if werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("git: tree %q: %w", dir, err)
	}
	return nil
}
