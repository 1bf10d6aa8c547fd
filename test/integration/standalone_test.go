package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStandaloneBinary builds gitsave-apiserver and runs it with --standalone: kubectl
// authenticates with a client certificate, as a developer would locally.
func TestStandaloneBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gitsave-apiserver")
	build := exec.Command("go", "build", "-o", bin, "github.com/gitsave/gitsave/cmd/apiserver")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	ca, caKey := newCA(t)
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", ca.Raw)
	certDER, key := issue(t, ca, caKey, "jane", []string{"editors"})
	writePEM(t, filepath.Join(dir, "jane.crt"), "CERTIFICATE", certDER)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	writePEM(t, filepath.Join(dir, "jane.key"), "EC PRIVATE KEY", keyDER)

	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server := exec.CommandContext(ctx, bin, "--standalone",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, "serving"), "--client-ca-file="+filepath.Join(dir, "ca.crt"),
		"--data-dir="+filepath.Join(dir, "data"))
	var logs bytes.Buffer
	server.Stdout, server.Stderr = &logs, &logs
	require.NoError(t, server.Start())
	defer func() { cancel(); _ = server.Wait() }()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: standalone
  cluster: {server: "https://127.0.0.1:`+strconv.Itoa(port)+`", insecure-skip-tls-verify: true}
users:
- name: jane
  user: {client-certificate: `+filepath.Join(dir, "jane.crt")+`, client-key: `+filepath.Join(dir, "jane.key")+`}
contexts:
- name: jane
  context: {cluster: standalone, user: jane, namespace: demo}
current-context: jane
`), 0o600))
	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(dir, "cache"))
		cmd.Stdin = strings.NewReader(stdin)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}

	require.Eventually(t, func() bool {
		_, err := kubectl("", "get", "--raw", "/readyz")
		return err == nil
	}, 60*time.Second, 200*time.Millisecond, "server did not become ready:\n%s", &logs)

	created, err := kubectl(manifest, "create", "-f", "-")
	require.NoError(t, err, created)
	author, err := kubectl("", "get", "creq", "save-web", "-o", "jsonpath={.status.author.username} {.status.author.groups}")
	require.NoError(t, err, author)
	assert.Equal(t, `jane ["editors","system:authenticated"]`, author, "the author comes from the client certificate")
	waited, err := kubectl("", "wait", "--for=condition=Attributed", "creq/save-web", "--timeout=30s")
	require.NoError(t, err, waited)
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return ca, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, user string, groups []string) ([]byte, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: user, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	return der, key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
