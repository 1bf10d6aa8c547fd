package sanitize

import (
	"path"
	"strings"
)

// ClusterScope is the directory used in place of a namespace for cluster-scoped
// objects. Namespace names are DNS labels and cannot contain "_", so it never
// collides with a real namespace.
const ClusterScope = "_cluster"

const fileExt = ".yaml"

// Path returns where an object's file lives in the repository:
//
//	<targetPath>/<namespace or _cluster>/<resource>[.<group>]/<name>.yaml
//
// The result is slash-separated, clean and relative (no leading slash, also when
// targetPath is "" or "/"). The core group adds no suffix.
func Path(targetPath, namespace, resource, group, name string) string {
	if namespace == "" {
		namespace = ClusterScope
	}
	dir := resource
	if group != "" {
		dir += "." + group
	}
	return path.Join(cleanTarget(targetPath), namespace, dir, name+fileExt)
}

// ParsePath is the inverse of Path, for resync: it reports ok only for paths that Path
// would produce under targetPath (so README files, deeper folders, other targets'
// paths and unclean paths are not objects). Resource plurals never contain a dot, so
// the first dot of the directory separates resource from group.
func ParsePath(targetPath, p string) (namespace, resource, group, name string, ok bool) {
	rel := p
	if t := cleanTarget(targetPath); t != "." {
		var found bool
		if rel, found = strings.CutPrefix(p, t+"/"); !found {
			return "", "", "", "", false
		}
	}
	parts := strings.Split(rel, "/")
	if len(parts) != 3 {
		return "", "", "", "", false
	}
	namespace, dir, file := parts[0], parts[1], parts[2]
	name, found := strings.CutSuffix(file, fileExt)
	if !found || name == "" || namespace == "" || dir == "" {
		return "", "", "", "", false
	}
	resource, group, _ = strings.Cut(dir, ".")
	if namespace == ClusterScope {
		namespace = ""
	}
	if resource == "" || Path(targetPath, namespace, resource, group, name) != p {
		return "", "", "", "", false
	}
	return namespace, resource, group, name, true
}

// cleanTarget makes a target path relative and clean; "" and "/" become ".".
func cleanTarget(t string) string {
	return path.Clean(strings.TrimLeft(t, "/"))
}
