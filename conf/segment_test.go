package conf_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/conf"
)

const dsnSecret = "vesta:s3cret-dsn@tcp(db:3306)/leaf"

// TestSegmentSecretFiles: the DSN and the Redis password come from files
// or the environment and are never shown, not even in errors.
func TestSegmentSecretFiles(t *testing.T) {
	l := mustLoad(t, conf.Options{Env: []string{
		"VESTA_SEGMENT_STORE=mysql",
		"VESTA_SEGMENT_DSN_FILE=" + writeFile(t, "dsn", dsnSecret+"\n"),
		"VESTA_SEGMENT_REDIS_PASSWORD_FILE=" + writeFile(t, "pw", "redis-pw\r\n"),
	}})
	s := l.Config.Segment
	if s.DSN.Reveal() != dsnSecret || s.Redis.Password.Reveal() != "redis-pw" {
		t.Fatalf("secrets not read: %q %q", s.DSN.Reveal(), s.Redis.Password.Reveal())
	}
	for _, out := range []string{l.Config.String(), fmt.Sprintf("%+v %#v", l.Config, l.Config.Redacted())} {
		if strings.Contains(out, "s3cret") || strings.Contains(out, "redis-pw") {
			t.Fatalf("a secret is shown: %s", out)
		}
	}

	_, err := conf.Load(conf.Options{Env: []string{
		"VESTA_SEGMENT_DSN=" + dsnSecret, "VESTA_SEGMENT_DSN_FILE=" + writeFile(t, "dsn", dsnSecret),
	}})
	wantKeyErrors(t, err, "segment.dsn_file", "set together with segment.dsn")
	_, err = conf.Load(conf.Options{Env: []string{"VESTA_SEGMENT_STORE=mysql", "VESTA_SEGMENT_DSN=vesta:s3cret@db/leaf"}})
	wantKeyErrors(t, err, "segment.dsn", "(value not shown)")
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the DSN is shown: %v", err)
	}
}

func TestSegmentThresholdDecoding(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want float64
		err  string
	}{
		{"segment: {threshold: 0.25}", 0.25, ""},
		{"segment: {threshold: 1}", 1, ""},
		{"segment: {threshold: 0}", 0, ""}, // segment's default, 0.1
		{`segment: {threshold: "0.5"}`, 0.5, ""},
		{"segment: {threshold: ten}", 0, `"ten"; want a number such as 0.1`},
		{"segment: {threshold: .nan}", 0, "Threshold: NaN; want 0 (meaning 0.1) to 1"},
		{"segment: {threshold: [0.1]}", 0, "want"},
	} {
		t.Run(tc.yaml, func(t *testing.T) {
			l, err := conf.Load(conf.Options{File: writeFile(t, "v.yaml", tc.yaml), Env: []string{}})
			if tc.err != "" {
				wantKeyErrors(t, err, "segment.threshold", tc.err)
				return
			}
			if err != nil || l.Config.Segment.Threshold != tc.want {
				t.Fatalf("%v, %v; want %v", l.Config.Segment.Threshold, err, tc.want)
			}
		})
	}
}

func TestSegmentIssuerConfig(t *testing.T) {
	c := conf.DefaultConfig()
	c.Segment.Threshold, c.Segment.TargetDuration, c.Segment.MaxStep = 0.2, time.Minute, 4096
	c.Segment.Preload = []string{"orders"}
	sc, err := c.SegmentConfig()
	if err != nil {
		t.Fatal(err)
	}
	if sc.Threshold != 0.2 || sc.TargetDuration != time.Minute || sc.MaxStep != 4096 || len(sc.Preload) != 1 || sc.RefreshTags != time.Minute {
		t.Fatalf("%+v", sc)
	}
	// A key means what its field means, zero included: no conversion.
	for _, d := range []time.Duration{0, -time.Second} {
		c.Segment.RefreshTags = d
		if sc, err := c.SegmentConfig(); err != nil || sc.RefreshTags != d {
			t.Fatalf("refresh_tags %v: RefreshTags %v, %v; want the same", d, sc.RefreshTags, err)
		}
	}
	c.Segment.Threshold = 2
	if _, err := c.SegmentConfig(); err == nil {
		t.Fatal("an invalid config passed")
	}
}
