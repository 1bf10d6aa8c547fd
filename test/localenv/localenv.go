// Package localenv reads the env.sh that hack/local/up.sh writes for the local control
// plane (KUBECONFIG_ADMIN, KUBECONFIG_JANE, …, GIT_REMOTE_URL, GIT_REMOTE_DIR), for the
// e2e suite and the load driver.
package localenv

import (
	"bufio"
	"os"
	"strings"
)

// Read returns the variables the file exports.
func Read(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out, s.Err()
}
