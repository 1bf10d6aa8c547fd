package git

import (
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
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
// creates (not yet stored) so a failed Commit leaves the store untouched.
type treeBuilder struct {
	r            *Repo
	objects      []plumbing.EncodedObject
	seen         map[plumbing.Hash]bool
	filesChanged int
}

func (b *treeBuilder) add(o plumbing.EncodedObject) {
	h := o.Hash()
	if b.seen == nil {
		b.seen = make(map[plumbing.Hash]bool)
	}
	if !b.seen[h] {
		b.seen[h] = true
		b.objects = append(b.objects, o)
	}
}

// apply returns the hash of tree `old` (zero: no tree) after the changes in d,
// or zero if the result is empty. Only trees whose content changes are built.
func (b *treeBuilder) apply(old plumbing.Hash, d *dirChanges, dir string) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if !old.IsZero() {
		t, err := object.GetTree(b.r.st, old)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("git: read tree %q: %w", dir, err)
		}
		entries = t.Entries
	}
	// changes holds the new entry for each name that really changes (nil: removed).
	changes := map[string]*object.TreeEntry{}
	current := func(name string) *object.TreeEntry {
		if e, ok := changes[name]; ok {
			return e
		}
		if i := findEntry(entries, name); i >= 0 {
			return &entries[i]
		}
		return nil
	}

	// Files first, so deleting file "x" and creating "x/y" in one batch works.
	for name, c := range d.files {
		e := current(name)
		if e != nil && e.Mode == filemode.Dir {
			return plumbing.ZeroHash, fmt.Errorf("git: %s: is a directory", c.Path)
		}
		if c.Delete {
			if e != nil {
				changes[name] = nil
				b.filesChanged++
			}
			continue
		}
		h := BlobHash(c.Content)
		if e != nil && e.Hash == h && e.Mode.IsFile() {
			continue
		}
		mode := filemode.Regular
		if e != nil && e.Mode == filemode.Executable {
			mode = filemode.Executable
		}
		if err := b.addBlob(c.Content); err != nil {
			return plumbing.ZeroHash, err
		}
		changes[name] = &object.TreeEntry{Name: name, Mode: mode, Hash: h}
		b.filesChanged++
	}

	for name, sub := range d.dirs {
		path := joinPath(dir, name)
		e := current(name)
		var oldSub plumbing.Hash
		if e != nil && e.Mode == filemode.Dir {
			oldSub = e.Hash
		}
		newSub, err := b.apply(oldSub, sub, path)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch {
		case e != nil && e.Mode != filemode.Dir:
			// Only deletes below a file: nothing to do. Anything else would
			// silently replace the file with a folder.
			if !newSub.IsZero() {
				return plumbing.ZeroHash, fmt.Errorf("git: %s: is a file, cannot hold files", path)
			}
		case newSub == oldSub:
		case newSub.IsZero():
			changes[name] = nil // the folder became empty: git has no empty folders
		default:
			changes[name] = &object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: newSub}
		}
	}

	if len(changes) == 0 {
		return old, nil
	}
	merged := mergeEntries(entries, changes)
	if len(merged) == 0 {
		return plumbing.ZeroHash, nil
	}
	return b.writeTree(merged)
}

func (b *treeBuilder) addBlob(content []byte) error {
	blob := b.r.st.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	blob.SetSize(int64(len(content)))
	w, err := blob.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write(content); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	b.add(blob)
	return nil
}

func (b *treeBuilder) writeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	o := b.r.st.NewEncodedObject()
	if err := encodeTree(o, entries); err != nil {
		return plumbing.ZeroHash, err
	}
	b.add(o)
	return o.Hash(), nil
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// lookup finds the entry at path in tree root. Not found is (entry{}, false, nil).
func (r *Repo) lookup(root plumbing.Hash, segs []string) (object.TreeEntry, bool, error) {
	cur := object.TreeEntry{Mode: filemode.Dir, Hash: root}
	for _, s := range segs {
		if cur.Mode != filemode.Dir || cur.Hash.IsZero() {
			return object.TreeEntry{}, false, nil
		}
		t, err := object.GetTree(r.st, cur.Hash)
		if err != nil {
			return object.TreeEntry{}, false, fmt.Errorf("git: read tree: %w", err)
		}
		i := findEntry(t.Entries, s)
		if i < 0 {
			return object.TreeEntry{}, false, nil
		}
		cur = t.Entries[i]
	}
	return cur, true, nil
}

// ReadFile returns the content of a file at Tip. A missing file (or a folder)
// is (nil, false, nil).
func (r *Repo) ReadFile(path string) ([]byte, bool, error) {
	segs, err := splitPath(path)
	if err != nil {
		return nil, false, err
	}
	e, ok, err := r.lookup(r.tipTree, segs)
	if err != nil || !ok || !e.Mode.IsFile() {
		return nil, false, err
	}
	blob, err := object.GetBlob(r.st, e.Hash)
	if err != nil {
		return nil, false, fmt.Errorf("git: read %s: %w", path, err)
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, false, fmt.Errorf("git: read %s: %w", path, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, false, fmt.Errorf("git: read %s: %w", path, err)
	}
	return data, true, nil
}

// ListFiles returns every file under the folder prefix ("" for the whole tree)
// at Tip, keyed by repository path, with blob hashes to compare against
// BlobHash without reading contents. A missing folder gives an empty map.
func (r *Repo) ListFiles(prefix string) (map[string]plumbing.Hash, error) {
	prefix = strings.Trim(prefix, "/")
	out := map[string]plumbing.Hash{}
	root := object.TreeEntry{Mode: filemode.Dir, Hash: r.tipTree}
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
	if root.Mode != filemode.Dir || root.Hash.IsZero() {
		return out, nil
	}
	return out, r.walk(root.Hash, prefix, out)
}

func (r *Repo) walk(tree plumbing.Hash, dir string, out map[string]plumbing.Hash) error {
	t, err := object.GetTree(r.st, tree)
	if err != nil {
		return fmt.Errorf("git: read tree %q: %w", dir, err)
	}
	for _, e := range t.Entries {
		p := joinPath(dir, e.Name)
		switch {
		case e.Mode == filemode.Dir:
			if err := r.walk(e.Hash, p, out); err != nil {
				return err
			}
		case e.Mode.IsFile():
			out[p] = e.Hash
		}
	}
	return nil
}
