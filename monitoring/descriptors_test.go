package monitoring_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/capacity"
	"github.com/vesta-go/vesta/internal/testkit/embedtest"
	"github.com/vesta-go/vesta/internal/testkit/nettest"
	"github.com/vesta-go/vesta/prommetrics"
	"github.com/vesta-go/vesta/rest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/segmentmetrics"
)

// described is a metric as its collector describes it.
type described struct {
	typ    string   // counter, gauge or histogram; "" while unknown
	labels []string // constant and variable, sorted
}

// recorder is a Registry that keeps what each collector registered on it
// describes: the labels from its descriptors, the type from the
// collector's Go type or from the metrics it collects.
type recorder struct {
	*prometheus.Registry
	tb      testing.TB
	metrics map[string]described
}

func newRecorder(tb testing.TB) *recorder {
	return &recorder{Registry: prometheus.NewRegistry(), tb: tb, metrics: map[string]described{}}
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err // AlreadyRegisteredError included: callers reuse the first
	}
	typ := ""
	switch c.(type) {
	case *prometheus.CounterVec:
		typ = "counter"
	case *prometheus.GaugeVec:
		typ = "gauge"
	case *prometheus.HistogramVec:
		typ = "histogram"
	}
	descs := make(chan *prometheus.Desc)
	go func() { c.Describe(descs); close(descs) }()
	for d := range descs {
		name, labels := readDesc(r.tb, d)
		r.metrics[name] = described{typ: typ, labels: labels}
	}
	r.collectTypes(c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// collectTypes reads the type of each metric c collects now.
func (r *recorder) collectTypes(c prometheus.Collector) {
	ms := make(chan prometheus.Metric)
	go func() { c.Collect(ms); close(ms) }()
	for m := range ms {
		name, _ := readDesc(r.tb, m.Desc())
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			r.tb.Errorf("%s: %v", name, err)
			continue
		}
		d := r.metrics[name]
		switch {
		case pb.Counter != nil:
			d.typ = "counter"
		case pb.Gauge != nil:
			d.typ = "gauge"
		case pb.Histogram != nil:
			d.typ = "histogram"
		}
		r.metrics[name] = d
	}
}

var (
	reDesc       = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)
	reConstLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)
)

// readDesc reads a descriptor's name and label names. client_golang
// gives them out only in the descriptor's String form.
func readDesc(tb testing.TB, d *prometheus.Desc) (string, []string) {
	tb.Helper()
	m := reDesc.FindStringSubmatch(d.String())
	if m == nil {
		tb.Fatalf("cannot read the descriptor %s (client_golang changed its String form?)", d)
	}
	var labels []string
	for _, l := range reConstLabel.FindAllStringSubmatch(m[2], -1) {
		labels = append(labels, l[1])
	}
	for l := range strings.SplitSeq(m[3], ",") {
		if l != "" {
			labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
		}
	}
	slices.Sort(labels)
	return m[1], labels
}

// registered builds, on one recorder, every collector of the catalogue's
// source packages as the product builds them: an embedded issuer on a
// fixed machine ID (the generator's, the lease's and the issued count),
// the central and REST servers (with the ceiling's and the listeners'),
// a Go client with its fallback, a segment issuer with one tag, the
// capacity tracker, and the build's gauge.
func registered(t *testing.T) map[string]described {
	t.Helper()
	ctx := context.Background()
	rec := newRecorder(t)

	is := embedtest.Static(t, 5)
	if err := prommetrics.RegisterIssuer(rec, is); err != nil {
		t.Fatal(err)
	}

	gen, err := core.New(ctx, core.Config{Machine: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gen.Close() })
	ccfg := central.DefaultConfig()
	ccfg.Registerer = rec
	if _, err := central.NewServer(gen, ccfg); err != nil {
		t.Fatal(err)
	}
	rcfg := rest.DefaultConfig()
	rcfg.Registerer = rec
	if _, err := rest.NewServer(gen, rcfg); err != nil {
		t.Fatal(err)
	}

	ln := nettest.Loopback(t)
	dead := ln.Addr().String() // no server: the client only registers
	ln.Close()
	kcfg := client.DefaultConfig(dead)
	kcfg.FallbackConfig.Machine.Static = new(core.MachineID(6))
	kcfg.FallbackConfig.DataDir = t.TempDir()
	c, err := client.New(ctx, kcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := prommetrics.RegisterClient(rec, c); err != nil {
		t.Fatal(err)
	}

	sm, err := segmentmetrics.New(rec)
	if err != nil {
		t.Fatal(err)
	}
	store := segment.NewMemStore()
	if err := store.Create(ctx, segment.TagInfo{Tag: "order", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	scfg := segment.DefaultConfig()
	scfg.OnStore, scfg.Preload = sm.OnStore, []string{"order"}
	seq, err := segment.Open(ctx, store, scfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seq.Close() })
	sm.Watch(seq)

	// The capacity tracker of vesta serve, on a lease with one pool.
	tags := func() []capacity.TagCounters {
		return []capacity.TagCounters{{Tag: "order", MaxID: 11, Step: 10, RangesFetched: 1}}
	}
	tr := capacity.New(capacity.Config{Gen: gen, Sequences: tags, Pools: func(context.Context) (capacity.Machine, error) {
		return capacity.Machine{Provider: "redis", Pools: []capacity.Pool{{Range: "server", IDs: "924-1023", Held: 1, Total: 100}}}, nil
	}})
	t.Cleanup(tr.Close)
	rec.MustRegister(tr.Collector())

	if err := prommetrics.RegisterBuildInfo(rec); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Fatal(err)
	}
	// The series that exist by now give the types of collectors that
	// describe no type of their own (the segment tags').
	families, err := rec.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		d, ok := rec.metrics[f.GetName()]
		if !ok || d.typ != "" {
			continue
		}
		d.typ = strings.ToLower(f.GetType().String())
		rec.metrics[f.GetName()] = d
	}
	return rec.metrics
}

// The catalogue is the code's: each metric listed with a package is
// registered by the product's collectors with exactly the catalogue's
// labels (constant ones, as range, included) and type. The catalogue need
// not list every metric (it is what the kit may query); the ones it
// leaves out are logged.
func TestCatalogueMatchesDescriptors(t *testing.T) {
	got := registered(t)
	known := catalogue(t)
	for _, m := range known {
		if m.source == "prometheus" || m.source == "client_golang" || m.source == "pending" {
			continue
		}
		d, ok := got[m.name]
		if !ok {
			t.Errorf("%s (%s): no collector registers it", m.name, m.source)
			continue
		}
		want := slices.Sorted(slices.Values(m.labels))
		if !slices.Equal(d.labels, want) {
			t.Errorf("%s: metrics.txt says labels %q; the code's are %q", m.name, orNone(want), orNone(d.labels))
		}
		if d.typ != m.typ {
			t.Errorf("%s: metrics.txt says %s; the code's is %q", m.name, m.typ, d.typ)
		}
	}
	var left []string
	for name := range got {
		if _, ok := known[name]; !ok && strings.HasPrefix(name, "vesta_") {
			left = append(left, name)
		}
	}
	slices.Sort(left)
	t.Logf("registered, not in metrics.txt: %s", strings.Join(left, " "))
}

func orNone(labels []string) string {
	if len(labels) == 0 {
		return "-"
	}
	return strings.Join(labels, ",")
}
