package validate_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// shutdownSeconds is vesta serve's graceful-stop bound (cmd/vesta
// shutdownTimeout): the grace period must exceed it.
const shutdownSeconds = 10

// manifests are every object of deploy/k8s/*.yaml, decoded strictly.
type manifests struct {
	configMaps   map[string]*corev1.ConfigMap
	services     map[string]*corev1.Service
	statefulSets map[string]*appsv1.StatefulSet
	pdbs         map[string]*policyv1.PodDisruptionBudget
	netPolicies  map[string]*networkingv1.NetworkPolicy
}

// newObject returns the Go type of a kind the kit may use; others are errors.
func newObject(gvk schema.GroupVersionKind) (any, error) {
	switch gvk {
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		return &corev1.ConfigMap{}, nil
	case corev1.SchemeGroupVersion.WithKind("Service"):
		return &corev1.Service{}, nil
	case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
		return &appsv1.StatefulSet{}, nil
	case policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"):
		return &policyv1.PodDisruptionBudget{}, nil
	case networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):
		return &networkingv1.NetworkPolicy{}, nil
	}
	return nil, fmt.Errorf("kind %v is not one the kit uses", gvk)
}

// decodeStrict splits a multi-document YAML stream and decodes each document
// into its API type, refusing unknown and duplicated fields.
func decodeStrict(r io.Reader, add func(obj any, name string) error) error {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for i := 0; ; i++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		gv, err := schema.ParseGroupVersion(meta.APIVersion)
		if err != nil {
			return fmt.Errorf("document %d: apiVersion: %w", i, err)
		}
		obj, err := newObject(gv.WithKind(meta.Kind))
		if err != nil {
			return fmt.Errorf("document %d (%s): %w", i, meta.Metadata.Name, err)
		}
		if err := unmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("document %d (%s %s): %w", i, meta.Kind, meta.Metadata.Name, err)
		}
		if meta.Metadata.Name == "" {
			return fmt.Errorf("document %d (%s): no metadata.name", i, meta.Kind)
		}
		if err := add(obj, meta.Metadata.Name); err != nil {
			return err
		}
	}
}

// unmarshalStrict decodes as the API server's strict field validation does:
// field names match case-sensitively (encoding/json would take clusterIp for
// clusterIP), and unknown or duplicated fields are errors.
func unmarshalStrict(doc []byte, obj any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
		}
	}
	return out
}

// put stores o under name in byName and reports whether the name was
// taken already.
func put[T any](byName map[string]*T, name string, o *T) (taken bool) {
	_, taken = byName[name]
	byName[name] = o
	return taken
}

func loadManifests(tb testing.TB, files ...string) manifests {
	tb.Helper()
	m := manifests{
		configMaps:   map[string]*corev1.ConfigMap{},
		services:     map[string]*corev1.Service{},
		statefulSets: map[string]*appsv1.StatefulSet{},
		pdbs:         map[string]*policyv1.PodDisruptionBudget{},
		netPolicies:  map[string]*networkingv1.NetworkPolicy{},
	}
	add := func(obj any, name string) error {
		dup := false
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			dup = put(m.configMaps, name, o)
		case *corev1.Service:
			dup = put(m.services, name, o)
		case *appsv1.StatefulSet:
			dup = put(m.statefulSets, name, o)
		case *policyv1.PodDisruptionBudget:
			dup = put(m.pdbs, name, o)
		case *networkingv1.NetworkPolicy:
			dup = put(m.netPolicies, name, o)
		}
		if dup {
			return fmt.Errorf("%T %s defined twice", obj, name)
		}
		return nil
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		err = decodeStrict(fh, add)
		fh.Close()
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
	}
	return m
}

func kitFiles(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob("../../deploy/k8s/*.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no manifests in deploy/k8s: %v", err)
	}
	return files
}

// kitStatefulSet loads the kit's manifests and returns them with the
// StatefulSet of name, failing the test without one.
func kitStatefulSet(tb testing.TB, name string) (manifests, *appsv1.StatefulSet) {
	tb.Helper()
	m := loadManifests(tb, kitFiles(tb)...)
	sts := m.statefulSets[name]
	if sts == nil {
		tb.Fatalf("no StatefulSet %s", name)
	}
	return m, sts
}

// The decoder refuses what the API server would: unknown fields (a typo
// such as readinesProbe, which kubectl apply without validation would drop
// silently), duplicated fields and kinds the kit does not use.
func TestDecodeStrictRefuses(t *testing.T) {
	ok := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n"
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown field", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {clusterIp: None}\n", "clusterIp"},
		{"misplaced probe", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: a}\nspec:\n  template:\n    spec:\n      containers: [{name: c, readinesProbe: {}}]\n", "readinesProbe"},
		{"duplicate field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\ndata: {k: w}\n", "data"},
		{"wrong type", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: a}\nspec: {replicas: three}\n", "replicas"},
		{"unknown kind", "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\n", "Secret"},
		{"wrong version", "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: a}\n", "PodDisruptionBudget"},
		{"no name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := decodeStrict(strings.NewReader(ok+"---\n"+tc.doc), func(any, string) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
	if err := decodeStrict(strings.NewReader(ok), func(any, string) error { return nil }); err != nil {
		t.Fatalf("a good document: %v", err)
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m := loadManifests(t, kitFiles(t)...)
	for _, name := range []string{"vesta", "redis"} {
		if m.statefulSets[name] == nil {
			t.Errorf("no StatefulSet %s", name)
		}
	}
	if m.pdbs["vesta"] == nil {
		t.Error("no PodDisruptionBudget vesta")
	}
}

// vestaConfig is the part of the ConfigMap's vesta.yaml the checks read
// (conf.Load in package deploy checks the whole file against vesta's keys).
type vestaConfig struct {
	Machine struct {
		Providers []string `json:"providers"`
		ID        *int     `json:"id"`
		K8sOffset *int     `json:"k8s_offset"`
	} `json:"machine"`
	TimeGuard struct {
		Dir string `json:"dir"`
	} `json:"time_guard"`
	Central struct {
		Listen string    `json:"listen"`
		TLS    configTLS `json:"tls"`
	} `json:"central"`
	REST struct {
		Listen      string    `json:"listen"`
		Token       string    `json:"token"`
		TokenFile   string    `json:"token_file"`
		MetricsAuth bool      `json:"metrics_auth"`
		TLS         configTLS `json:"tls"`
	} `json:"rest"`
	Metrics struct {
		Listen string    `json:"listen"`
		TLS    configTLS `json:"tls"`
	} `json:"metrics"`
}

type configTLS struct {
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	ClientCA string `json:"client_ca"`
}

func TestVestaFleet(t *testing.T) {
	m, sts := kitStatefulSet(t, "vesta")
	pod := sts.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]

	// Labels: the selector picks the template, the Services and the PDB the pods.
	sel, err := metaSelector(sts.Spec.Selector.MatchLabels)
	if err != nil || !sel.Matches(labels.Set(sts.Spec.Template.Labels)) {
		t.Errorf("StatefulSet selector %v does not match its template %v", sts.Spec.Selector, sts.Spec.Template.Labels)
	}
	for name, svc := range m.services {
		if svc.Labels["app.kubernetes.io/name"] != "vesta" {
			continue
		}
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(sts.Spec.Template.Labels)) {
			t.Errorf("Service %s selects %v, not the vesta pods", name, svc.Spec.Selector)
		}
		for _, p := range svc.Spec.Ports {
			if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.String() }) {
				t.Errorf("Service %s targets port %s, which the container does not name", name, p.TargetPort.String())
			}
		}
	}
	headless := m.services[sts.Spec.ServiceName]
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("serviceName %q is not a headless Service of the kit", sts.Spec.ServiceName)
	}
	pdb := m.pdbs["vesta"]
	if pdb != nil {
		if s, err := metaSelector(pdb.Spec.Selector.MatchLabels); err != nil || !s.Matches(labels.Set(sts.Spec.Template.Labels)) {
			t.Errorf("PDB selector %v does not match the pods", pdb.Spec.Selector)
		}
		if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
			t.Error("PDB sets neither maxUnavailable nor minAvailable")
		}
	}

	// Graceful termination longer than vesta's shutdown bound.
	if g := pod.TerminationGracePeriodSeconds; g == nil {
		t.Errorf("terminationGracePeriodSeconds unset (30s by default): set it, more than %ds", shutdownSeconds)
	} else if *g <= shutdownSeconds {
		t.Errorf("terminationGracePeriodSeconds %d, want more than %d", *g, shutdownSeconds)
	}

	// Probes: liveness on /healthz, readiness on /readyz, on a named port.
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: none or not an HTTP GET", name)
			return
		}
		if p.HTTPGet.Path != path {
			t.Errorf("%s probe path %q, want %q", name, p.HTTPGet.Path, path)
		}
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
			return cp.Name == p.HTTPGet.Port.String() && cp.ContainerPort == 7080
		}) {
			t.Errorf("%s probe port %s is not the REST port 7080", name, p.HTTPGet.Port.String())
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	if c.StartupProbe != nil {
		probe("startup", c.StartupProbe, "/healthz")
		// Start-up may wait time_guard.max_startup_wait (10s) for the clock.
		if s := c.StartupProbe.PeriodSeconds * c.StartupProbe.FailureThreshold; s <= shutdownSeconds {
			t.Errorf("startup probe allows %ds, less than max_startup_wait", s)
		}
	}

	// Resources.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Error("no memory limit")
	}

	// Non-root, read-only root file system, no privilege escalation.
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, all capabilities dropped", sc)
	}

	// The configuration: a ConfigMap of the kit, mounted where --config reads it.
	cfg, cfgPath := vestaConfigOf(t, m, pod, c)
	if !slices.Contains(c.Args, "--config") || !slices.Contains(c.Args, cfgPath) {
		t.Errorf("args %v do not read the mounted configuration %s", c.Args, cfgPath)
	}

	// Every pod its own machine ID: k8s (ordinal + offset) or redis leases,
	// never one static ID for all.
	if cfg.Machine.ID != nil {
		t.Errorf("machine.id %d is set: every pod would share it", *cfg.Machine.ID)
	}
	if len(cfg.Machine.Providers) == 0 {
		t.Error("machine.providers is empty")
	}
	for _, p := range cfg.Machine.Providers {
		if p != "k8s" && p != "redis" {
			t.Errorf("machine.providers has %q: only k8s and redis give each pod its own ID", p)
		}
	}
	if slices.Contains(cfg.Machine.Providers, "k8s") {
		if cfg.Machine.K8sOffset == nil {
			t.Error("machine.k8s_offset not set")
		} else if max := *cfg.Machine.K8sOffset + int(*sts.Spec.Replicas) - 1; *cfg.Machine.K8sOffset < 924 || max > 1023 {
			t.Errorf("k8s_offset %d with %d replicas leaves the server range 924-1023", *cfg.Machine.K8sOffset, *sts.Spec.Replicas)
		}
		// The mark of ordinal N's machine ID must follow it: a volume claim
		// per ordinal, not an emptyDir that a rescheduled pod loses.
		if !slices.ContainsFunc(sts.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool {
			return mountedAt(c, p.Name) == cfg.TimeGuard.Dir
		}) {
			t.Errorf("time_guard.dir %q is not a volumeClaimTemplate's mount: with the k8s provider the mark must follow the ordinal", cfg.TimeGuard.Dir)
		}
	}

	// The time guard writes on a read-only root: its directory is a volume.
	if cfg.TimeGuard.Dir == "" {
		t.Error("time_guard.dir is empty: no guard")
	} else if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool {
		return v.MountPath == cfg.TimeGuard.Dir && !v.ReadOnly
	}) {
		t.Errorf("time_guard.dir %q is not a writable volume mount", cfg.TimeGuard.Dir)
	}

	// Listeners on every interface, on the container's ports.
	for key, l := range map[string]struct {
		addr string
		port int32
	}{"central.listen": {cfg.Central.Listen, 7070}, "rest.listen": {cfg.REST.Listen, 7080}, "metrics.listen": {cfg.Metrics.Listen, 7090}} {
		if l.addr != fmt.Sprintf(":%d", l.port) {
			t.Errorf("%s %q, want :%d", key, l.addr, l.port)
		}
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == l.port }) {
			t.Errorf("%s: no container port %d", key, l.port)
		}
	}
}

func metaSelector(ml map[string]string) (labels.Selector, error) {
	if len(ml) == 0 {
		return nil, errors.New("empty selector")
	}
	return labels.SelectorFromSet(ml), nil
}

func mountedAt(c corev1.Container, volume string) string {
	for _, v := range c.VolumeMounts {
		if v.Name == volume {
			return v.MountPath
		}
	}
	return ""
}

// vestaConfigOf finds the ConfigMap volume of the container, and returns its
// vesta.yaml parsed and the path the container sees it at.
func vestaConfigOf(tb testing.TB, m manifests, pod corev1.PodSpec, c corev1.Container) (vestaConfig, string) {
	tb.Helper()
	for _, v := range pod.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm := m.configMaps[v.ConfigMap.Name]
		if cm == nil {
			tb.Fatalf("volume %s: ConfigMap %s is not in the kit", v.Name, v.ConfigMap.Name)
		}
		text, ok := cm.Data["vesta.yaml"]
		if !ok {
			continue
		}
		var cfg vestaConfig
		if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
			tb.Fatalf("ConfigMap %s vesta.yaml: %v", cm.Name, err)
		}
		dir := mountedAt(c, v.Name)
		if dir == "" {
			tb.Fatalf("ConfigMap volume %s is not mounted", v.Name)
		}
		return cfg, dir + "/vesta.yaml"
	}
	tb.Fatal("no ConfigMap volume holding vesta.yaml")
	return vestaConfig{}, ""
}

func TestRedisAOF(t *testing.T) {
	m, sts := kitStatefulSet(t, "redis")
	if *sts.Spec.Replicas != 1 {
		t.Errorf("redis replicas %d: one primary (an asynchronous replica can lose acknowledged lease writes)", *sts.Spec.Replicas)
	}
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	var conf string
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && m.configMaps[v.ConfigMap.Name] != nil {
			conf = m.configMaps[v.ConfigMap.Name].Data["redis.conf"]
		}
	}
	settings := map[string]string{}
	for line := range strings.Lines(conf) {
		f := strings.Fields(line)
		if len(f) >= 2 && !strings.HasPrefix(f[0], "#") {
			settings[f[0]] = strings.Join(f[1:], " ")
		}
	}
	if settings["appendonly"] != "yes" {
		t.Errorf("appendonly %q, want yes", settings["appendonly"])
	}
	if s := settings["appendfsync"]; s != "always" && s != "everysec" {
		t.Errorf("appendfsync %q, want always or everysec", s)
	}
	if settings["maxmemory-policy"] != "noeviction" {
		t.Errorf("maxmemory-policy %q: leases must never be evicted", settings["maxmemory-policy"])
	}
	dir := settings["dir"]
	if !slices.ContainsFunc(sts.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool {
		return mountedAt(c, p.Name) == dir
	}) {
		t.Errorf("redis dir %q is not on a persistent volume", dir)
	}
	if !slices.Contains(c.Args, "/etc/redis/redis.conf") || mountedAt(c, "config") != "/etc/redis" {
		t.Errorf("redis args %v do not read the mounted redis.conf", c.Args)
	}
}
