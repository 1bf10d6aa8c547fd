package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	configv1alpha1 "github.com/gitsave/gitsave/pkg/apis/config/v1alpha1"
)

const editorRole = "gitsave-bench-editor"

// editors is the group every bench author is in (jane's token says so; the
// impersonated authors are given it).
const editors = "editors"

// ensureEditorRole lets group editors edit ConfigMaps and save, wherever a
// bench namespace binds it.
func (c *cluster) ensureEditorRole(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: editorRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{"gitsave.dev"}, Resources: []string{"commitrequests"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
			{APIGroups: []string{"config.gitsave.dev"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	_, err := c.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// namespace creates a bench namespace where editors may edit and save, with
// the Git credentials Secret.
func (c *cluster) namespace(ctx context.Context, name string) error {
	if _, err := c.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gitsave.dev/bench": "true"}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.admin.RbacV1().RoleBindings(name).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "editors"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: editorRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: editors}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := c.admin.CoreV1().Secrets(name).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Type:       corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"username": c.gitUser, "password": c.gitPass},
	}, metav1.CreateOptions{})
	return err
}

// target is one GitProvider + GitTarget + WatchRule (ConfigMaps of the
// namespace), all named name.
type target struct {
	ns, name     string
	url, branch  string
	path         string
	window       time.Duration
	maxEvents    int32
	providerOnly bool
}

func (c *cluster) mirror(ctx context.Context, t target) error {
	cfg := c.adminGS.ConfigV1alpha1()
	if _, err := cfg.GitProviders(t.ns).Create(ctx, &configv1alpha1.GitProvider{
		ObjectMeta: metav1.ObjectMeta{Name: t.name},
		Spec: configv1alpha1.GitProviderSpec{
			URL:       t.url,
			SecretRef: &configv1alpha1.LocalObjectReference{Name: "git-creds"},
		},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := cfg.GitTargets(t.ns).Create(ctx, &configv1alpha1.GitTarget{
		ObjectMeta: metav1.ObjectMeta{Name: t.name},
		Spec: configv1alpha1.GitTargetSpec{
			ProviderRef:     configv1alpha1.LocalObjectReference{Name: t.name},
			Branch:          t.branch,
			Path:            t.path,
			CommitWindow:    metav1.Duration{Duration: t.window},
			MaxWindowEvents: t.maxEvents,
		},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := cfg.WatchRules(t.ns).Create(ctx, &configv1alpha1.WatchRule{
		ObjectMeta: metav1.ObjectMeta{Name: t.name},
		Spec: configv1alpha1.WatchRuleSpec{
			TargetRef: configv1alpha1.LocalObjectReference{Name: t.name},
			Rules:     []configv1alpha1.ResourceRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}}},
		},
	}, metav1.CreateOptions{})
	return err
}

// waitReady waits until the GitTarget and the WatchRule report Ready=True.
// gitsave writes GitTarget status every 5 s, so this takes a few seconds.
func (c *cluster) waitReady(ctx context.Context, ns, name string, timeout time.Duration) error {
	cfg := c.adminGS.ConfigV1alpha1()
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		gt, err := cfg.GitTargets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		wr, err := cfg.WatchRules(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return meta.IsStatusConditionTrue(gt.Status.Conditions, "Ready") &&
			meta.IsStatusConditionTrue(wr.Status.Conditions, "Ready"), nil
	})
}

// impersonate returns the admin's config acting as user in group editors:
// the admission webhook, and so gitsave, sees that user as the author.
func (c *cluster) impersonate(user string) *rest.Config {
	cfg := rest.CopyConfig(c.adminCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{editors, "system:authenticated"}}
	return cfg
}

// repoURL is the smart-HTTP URL of bare repository name.git under the git root.
func (c *cluster) repoURL(name string) string { return c.gitBaseURL + "/" + name + ".git" }

func (c *cluster) repoDir(name string) string { return filepath.Join(c.gitRoot, name+".git") }

// cloneURL carries the credentials, for the git CLI.
func (c *cluster) cloneURL(name string) string {
	return strings.Replace(c.repoURL(name), "://", "://"+c.gitUser+":"+c.gitPass+"@", 1)
}

// git runs the git CLI isolated from the user's configuration.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}
