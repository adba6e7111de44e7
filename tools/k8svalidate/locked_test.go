package validate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// The labels the kit's NetworkPolicies admit: a client's pods and
// Prometheus's.
var (
	clientLabel     = map[string]string{"vesta-client": "true"}
	prometheusLabel = map[string]string{"vesta-prometheus": "true"}
)

// secretFile is where a file of the configuration comes from: a key of a
// Secret mounted into the container.
type secretFile struct{ secret, key string }

// secretFileAt resolves a file path the container reads to the Secret
// volume mounted over it; it fails tb when the file is not in a Secret, or
// in one that may be missing (optional), since the pod would then start
// without it.
func secretFileAt(tb testing.TB, pod corev1.PodSpec, c corev1.Container, key, file string) secretFile {
	tb.Helper()
	if file == "" {
		tb.Fatalf("%s is empty", key)
	}
	for _, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, file)
		if err != nil || strings.HasPrefix(rel, "..") || strings.Contains(rel, "/") {
			continue
		}
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		if i < 0 || pod.Volumes[i].Secret == nil {
			tb.Fatalf("%s %s: volume %s is not a Secret", key, file, vm.Name)
		}
		src := pod.Volumes[i].Secret
		if src.Optional != nil && *src.Optional {
			tb.Errorf("%s: Secret %s is optional: the pod would start without %s", key, src.SecretName, file)
		}
		if !vm.ReadOnly {
			tb.Errorf("%s: Secret %s is mounted writable", key, src.SecretName)
		}
		// The pod runs as 65532 with fsGroup 65532: files of the volume
		// are root's, of that group.
		if m := src.DefaultMode; m != nil && *m&0o040 == 0 {
			tb.Errorf("%s: Secret %s has mode %#o, which its group (fsGroup) cannot read", key, src.SecretName, *m)
		}
		secretKey := rel
		for _, it := range src.Items {
			if it.Path == rel {
				secretKey = it.Key
			}
		}
		return secretFile{src.SecretName, secretKey}
	}
	tb.Fatalf("%s %s is not in a mounted volume", key, file)
	return secretFile{}
}

// The kit ships locked: REST's token from a Secret (never inline), the
// token required on /metrics too, RPC over mutual TLS, REST and the
// metrics listener over TLS (the token never crosses the network in
// clear) with the files of a Secret, and probes that need neither.
func TestVestaLocked(t *testing.T) {
	m, sts := kitStatefulSet(t, "vesta")
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	cfg, _ := vestaConfigOf(t, m, pod, c)

	if cfg.REST.Token != "" {
		t.Error("rest.token is written in the ConfigMap: the token belongs in a Secret (rest.token_file)")
	}
	token := secretFileAt(t, pod, c, "rest.token_file", cfg.REST.TokenFile)
	if !cfg.REST.MetricsAuth {
		t.Error("rest.metrics_auth is false: /metrics is open to whoever reaches the port")
	}

	// One Secret holds the servers' certificate, key and CA, in the keys a
	// cert-manager Certificate writes.
	central, rest, metrics := cfg.Central.TLS, cfg.REST.TLS, cfg.Metrics.TLS
	files := map[string]secretFile{
		"central.tls.cert":      secretFileAt(t, pod, c, "central.tls.cert", central.Cert),
		"central.tls.key":       secretFileAt(t, pod, c, "central.tls.key", central.Key),
		"central.tls.client_ca": secretFileAt(t, pod, c, "central.tls.client_ca", central.ClientCA),
		"rest.tls.cert":         secretFileAt(t, pod, c, "rest.tls.cert", rest.Cert),
		"rest.tls.key":          secretFileAt(t, pod, c, "rest.tls.key", rest.Key),
	}
	want := map[string]string{
		"central.tls.cert": "tls.crt", "central.tls.key": "tls.key", "central.tls.client_ca": "ca.crt",
		"rest.tls.cert": "tls.crt", "rest.tls.key": "tls.key",
	}
	// The metrics listener takes the token on each scrape: over TLS, or
	// it crosses the network in clear.
	if cfg.Metrics.Listen != "" && cfg.REST.MetricsAuth {
		files["metrics.tls.cert"] = secretFileAt(t, pod, c, "metrics.tls.cert", metrics.Cert)
		files["metrics.tls.key"] = secretFileAt(t, pod, c, "metrics.tls.key", metrics.Key)
		want["metrics.tls.cert"], want["metrics.tls.key"] = "tls.crt", "tls.key"
		if scheme := sts.Spec.Template.Annotations["prometheus.io/scheme"]; scheme != "https" {
			t.Errorf("prometheus.io/scheme %q: Prometheus would scrape metrics.tls over plain HTTP; want https", scheme)
		}
	}
	tlsSecret := files["central.tls.cert"].secret
	for key, want := range want {
		if f := files[key]; f.secret != tlsSecret || f.key != want {
			t.Errorf("%s is key %s of Secret %s, want key %s of Secret %s", key, f.key, f.secret, want, tlsSecret)
		}
	}
	if token.secret == tlsSecret {
		t.Errorf("the token is in the TLS Secret %s, which cert-manager rewrites", tlsSecret)
	}
	// The kubelet presents no client certificate: a REST client CA would
	// refuse the probes at the handshake.
	if rest.ClientCA != "" {
		t.Errorf("rest.tls.client_ca %q: the kubelet's probes would be refused", rest.ClientCA)
	}

	// The probes speak the listener's scheme and need no token (the server
	// keeps /healthz and /readyz open).
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			continue // TestVestaFleet reports a missing probe
		}
		if p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s probe scheme %q, want HTTPS: rest.tls is on", name, p.HTTPGet.Scheme)
		}
		if p.HTTPGet.Path != "/healthz" && p.HTTPGet.Path != "/readyz" {
			t.Errorf("%s probe on %s, which needs the token", name, p.HTTPGet.Path)
		}
		for _, h := range p.HTTPGet.HTTPHeaders {
			if strings.EqualFold(h.Name, "Authorization") {
				t.Errorf("%s probe sends Authorization: the token would be written in the manifest", name)
			}
		}
	}

	// The header tells how to create both Secrets, by these names and keys.
	text, err := os.ReadFile("../../deploy/k8s/vesta.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("kubectl create secret generic %s --from-literal=%s=", token.secret, token.key),
		fmt.Sprintf("kubectl create secret generic %s --from-file=tls.crt=", tlsSecret),
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("vesta.yaml does not say how to create the Secret: no %q", want)
		}
	}

	// cert-manager's example issues that Secret: a server certificate for
	// every name clients dial, and a client certificate from the same CA.
	certs := loadCertManager(t)
	server, ok := certs[tlsSecret]
	if !ok {
		t.Fatalf("deploy/k8s/cert-manager issues no Certificate into Secret %s", tlsSecret)
	}
	if !slices.Contains(server.Spec.Usages, "server auth") {
		t.Errorf("Certificate %s usages %v: want server auth", server.Metadata.Name, server.Spec.Usages)
	}
	for name, svc := range m.services {
		if svc.Labels["app.kubernetes.io/name"] != "vesta" {
			continue
		}
		if !slices.Contains(server.Spec.DNSNames, name) {
			t.Errorf("Certificate %s dnsNames %v: no %s (Service)", server.Metadata.Name, server.Spec.DNSNames, name)
		}
		if svc.Spec.ClusterIP == corev1.ClusterIPNone && !slices.Contains(server.Spec.DNSNames, "*."+name) {
			t.Errorf("Certificate %s dnsNames %v: no *.%s (the pods of the headless Service)", server.Metadata.Name, server.Spec.DNSNames, name)
		}
	}
	clients := 0
	for _, cert := range certs {
		if slices.Contains(cert.Spec.Usages, "client auth") {
			clients++
			if cert.Spec.IssuerRef != server.Spec.IssuerRef {
				t.Errorf("client Certificate %s is issued by %v, the servers' by %v: central.tls.client_ca (ca.crt) would refuse it",
					cert.Metadata.Name, cert.Spec.IssuerRef, server.Spec.IssuerRef)
			}
		}
	}
	if clients == 0 {
		t.Error("deploy/k8s/cert-manager shows no client Certificate (usages: client auth)")
	}
}

// certificate is the part of a cert-manager Certificate the checks read.
type certificate struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		SecretName string   `json:"secretName"`
		DNSNames   []string `json:"dnsNames"`
		Usages     []string `json:"usages"`
		IssuerRef  struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"issuerRef"`
	} `json:"spec"`
}

// loadCertManager returns the Certificates of deploy/k8s/cert-manager by
// the Secret each fills. cert-manager's types are not the Kubernetes API's,
// so the documents are read loosely.
func loadCertManager(tb testing.TB) map[string]certificate {
	tb.Helper()
	files, err := filepath.Glob("../../deploy/k8s/cert-manager/*.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no manifests in deploy/k8s/cert-manager: %v", err)
	}
	out := map[string]certificate{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for doc := range strings.SplitSeq(string(b), "\n---\n") {
			var c certificate
			if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			if c.Kind == "Certificate" {
				out[c.Spec.SecretName] = c
			}
		}
	}
	return out
}

// peerRequires reports whether a NetworkPolicy peer lets in pods labelled
// want, and only such pods: a pod selector requiring want's labels, no IP
// block.
func peerRequires(p networkingv1.NetworkPolicyPeer, want map[string]string) bool {
	if p.IPBlock != nil || p.PodSelector == nil || len(p.PodSelector.MatchExpressions) > 0 {
		return false
	}
	for k, v := range want {
		if p.PodSelector.MatchLabels[k] != v {
			return false
		}
	}
	return true
}

// portNumber resolves a NetworkPolicy port (a number or a container port's
// name) to the container's port number.
func portNumber(c corev1.Container, p networkingv1.NetworkPolicyPort) int32 {
	if p.Port == nil {
		return 0
	}
	if p.Port.IntVal != 0 {
		return p.Port.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.Port.StrVal {
			return cp.ContainerPort
		}
	}
	return -1
}

// ingressOf returns, for each port of the pods selected, the labels its
// peers require, over every NetworkPolicy of the kit that selects them
// (policies add up). A rule open to all sources or all ports is reported.
func ingressOf(t *testing.T, m manifests, c corev1.Container, podLabels map[string]string) (map[int32][]map[string]string, bool) {
	t.Helper()
	admitted := map[int32][]map[string]string{}
	selected := false
	for name, np := range m.netPolicies {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || !sel.Matches(labels.Set(podLabels)) {
			continue
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			continue
		}
		selected = true
		for i, r := range np.Spec.Ingress {
			if len(r.From) == 0 || len(r.Ports) == 0 {
				t.Errorf("NetworkPolicy %s ingress rule %d admits every source or every port", name, i)
				continue
			}
			for _, p := range r.Ports {
				n := portNumber(c, p)
				if n <= 0 {
					t.Errorf("NetworkPolicy %s ingress rule %d: port %v is not a port of the container", name, i, p.Port)
					continue
				}
				for _, peer := range r.From {
					var req map[string]string
					if peer.PodSelector != nil && peer.IPBlock == nil && len(peer.PodSelector.MatchExpressions) == 0 {
						req = peer.PodSelector.MatchLabels
					}
					admitted[n] = append(admitted[n], req)
				}
			}
		}
	}
	return admitted, selected
}

// checkOnly reports a port open to peers that do not require one of the
// labels of wants.
func checkOnly(t *testing.T, what string, admitted map[int32][]map[string]string, port int32, wants ...map[string]string) {
	t.Helper()
	peers := admitted[port]
	if len(peers) == 0 {
		t.Errorf("%s: port %d admits no one", what, port)
	}
	for _, req := range peers {
		if !slices.ContainsFunc(wants, func(w map[string]string) bool {
			return peerRequires(networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: req}}, w)
		}) {
			t.Errorf("%s: port %d admits pods labelled %v; want only %v", what, port, req, wants)
		}
	}
}

// The NetworkPolicies let only labelled clients reach RPC and REST, only
// Prometheus reach the metrics port, and only vesta and its clients reach
// Redis; the servers may still resolve names and reach Redis and etcd.
func TestNetworkPolicy(t *testing.T) {
	m, sts := kitStatefulSet(t, "vesta")
	c := sts.Spec.Template.Spec.Containers[0]
	admitted, selected := ingressOf(t, m, c, sts.Spec.Template.Labels)
	if !selected {
		t.Fatal("no NetworkPolicy of the kit selects the vesta pods for ingress: every pod of the cluster reaches them")
	}
	checkOnly(t, "vesta RPC", admitted, 7070, clientLabel)
	checkOnly(t, "vesta REST", admitted, 7080, clientLabel)
	checkOnly(t, "vesta metrics", admitted, 7090, prometheusLabel)
	for port := range admitted {
		if port != 7070 && port != 7080 && port != 7090 {
			t.Errorf("vesta: port %d is open", port)
		}
	}

	// Egress, when restricted, still reaches DNS, Redis and etcd.
	for name, np := range m.netPolicies {
		if sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || !sel.Matches(labels.Set(sts.Spec.Template.Labels)) ||
			!slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			continue
		}
		for _, want := range []struct {
			port  int32
			proto corev1.Protocol
			what  string
		}{{53, corev1.ProtocolUDP, "DNS"}, {53, corev1.ProtocolTCP, "DNS"}, {6379, corev1.ProtocolTCP, "Redis"}, {2379, corev1.ProtocolTCP, "etcd"}} {
			if !slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
				return slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
					return p.Port != nil && p.Port.IntVal == want.port && (p.Protocol == nil || *p.Protocol == want.proto)
				})
			}) {
				t.Errorf("NetworkPolicy %s: no egress to %s (%s %d)", name, want.what, want.proto, want.port)
			}
		}
	}

	if redis := m.statefulSets["redis"]; redis != nil {
		rc := redis.Spec.Template.Spec.Containers[0]
		admitted, selected := ingressOf(t, m, rc, redis.Spec.Template.Labels)
		if !selected {
			t.Fatal("no NetworkPolicy of the kit selects the redis pods: any pod could write a lease")
		}
		checkOnly(t, "redis", admitted, 6379, sts.Spec.Template.Labels, clientLabel)
	}
}

// The checks above do catch an open policy.
func TestNetworkPolicyChecksCatch(t *testing.T) {
	open := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
	if peerRequires(open, clientLabel) {
		t.Error("an empty pod selector (every pod) passed as requiring the client label")
	}
	if peerRequires(networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: clientLabel},
		IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}, clientLabel) {
		t.Error("an IP block passed as requiring the client label")
	}
}
