package deploy_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/tlstest"
)

// kitSecrets stands in for the Secrets the Kubernetes kit mounts: a
// directory per Secret volume of the StatefulSet vesta, holding the files
// that the commands of its header (kubectl create secret) or cert-manager
// write: the token, and the servers' certificate and key with the CA.
type kitSecrets struct {
	mounts map[string]string // mount path in the container -> its directory here
	token  string
	pki    *tlstest.PKI
}

// newToken returns a token as the kits' instructions make one
// (openssl rand -hex 32).
func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newKitSecrets(tb testing.TB) kitSecrets {
	tb.Helper()
	k := kitSecrets{mounts: map[string]string{}, token: newToken(), pki: tlstest.New(tb)}
	scratch := k.pki.WriteFiles(tb, tb.TempDir())
	contents := map[string]map[string]string{
		"vesta-token": {"token": k.token + "\n"},
		"vesta-tls": {"tls.crt": readFile(tb, scratch.ServerCert), "tls.key": readFile(tb, scratch.ServerKey),
			"ca.crt": readFile(tb, scratch.CA)},
	}
	root := tb.TempDir()
	// Read by the image's user (65532) when mounted into a container.
	if err := os.Chmod(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	for mountPath, secret := range secretMounts(tb) {
		files, ok := contents[secret]
		if !ok {
			tb.Fatalf("the StatefulSet mounts Secret %s, which this test does not know", secret)
		}
		dir := filepath.Join(root, secret)
		if err := os.Mkdir(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		k.mounts[mountPath] = dir
	}
	return k
}

// secretMounts returns the Secret volumes of the StatefulSet vesta's
// container: mount path -> Secret name.
func secretMounts(tb testing.TB) map[string]string {
	tb.Helper()
	spec := mapAt(manifest(tb, "k8s/vesta.yaml", "StatefulSet", "vesta"), "spec", "template", "spec")
	secrets := map[string]string{}
	volumes, _ := spec["volumes"].([]any)
	for _, v := range volumes {
		v, _ := v.(map[string]any)
		if s := mapAt(v, "secret"); s != nil {
			secrets[fmt.Sprint(v["name"])] = fmt.Sprint(s["secretName"])
		}
	}
	containers, _ := spec["containers"].([]any)
	c, _ := containers[0].(map[string]any)
	mounts, _ := c["volumeMounts"].([]any)
	out := map[string]string{}
	for _, m := range mounts {
		m, _ := m.(map[string]any)
		if s, ok := secrets[fmt.Sprint(m["name"])]; ok {
			out[fmt.Sprint(m["mountPath"])] = s
		}
	}
	return out
}

// local rewrites the paths of the Secrets' mounts in a configuration to
// the directories standing in for them.
func (k kitSecrets) local(text string) string {
	for _, mountPath := range slices.Sorted(maps.Keys(k.mounts)) {
		text = strings.ReplaceAll(text, mountPath+"/", k.mounts[mountPath]+"/")
	}
	return text
}

// podmanVolumes are the -v flags that mount the stand-ins where the pod
// has its Secrets.
func (k kitSecrets) podmanVolumes() []string {
	var out []string
	for mountPath, dir := range k.mounts {
		out = append(out, "-v", dir+":"+mountPath+":ro")
	}
	return out
}
