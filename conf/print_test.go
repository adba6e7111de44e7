package conf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
)

const (
	redisSecret = "hunter2-redis"
	restSecret  = "tok-s3cret-of-rest"
)

func secretConfig(t testing.TB) conf.Config {
	t.Helper()
	l := mustLoad(t, conf.Options{Env: []string{
		"VESTA_MACHINE_REDIS_PASSWORD=" + redisSecret,
		"VESTA_REST_TOKEN_FILE=" + writeFile(t, "token", restSecret+"\n"),
	}})
	return l.Config
}

func wantNoSecret(t testing.TB, what, s string) {
	t.Helper()
	if strings.Contains(s, redisSecret) || strings.Contains(s, restSecret) {
		t.Errorf("%s shows a secret: %s", what, s)
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	c := secretConfig(t)
	if c.Machine.Redis.Password.Reveal() != redisSecret || c.REST.Token.Reveal() != restSecret {
		t.Fatal("secrets not loaded")
	}
	for _, v := range []any{c, &c, c.Machine, c.Machine.Redis, c.REST, c.Machine.Redis.Password, c.REST.Token} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%10.3s"} {
			s := fmt.Sprintf(verb, v)
			wantNoSecret(t, fmt.Sprintf("%s of %T", verb, v), s)
		}
	}
	if s := fmt.Sprint(c); !strings.Contains(s, "machine.redis.password=[redacted]") || !strings.Contains(s, "rest.token=[redacted]") {
		t.Errorf("String() = %s; want the secrets shown as [redacted]", s)
	}

	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		log := slog.New(h)
		log.Info("config", "config", c)
		log.Info("sections", "redis", c.Machine.Redis, "rest", c.REST, "token", c.REST.Token)
	}
	wantNoSecret(t, "the log", buf.String())
	for _, want := range []string{"config.machine.redis.password=[redacted]", `"password":"[redacted]"`, "config.id.layout=sorted"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, buf.String())
		}
	}

	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	wantNoSecret(t, "JSON", string(b))

	r := c.Redacted()
	if r.Machine.Redis.Password.Reveal() != "[redacted]" || r.REST.Token.Reveal() != "[redacted]" {
		t.Errorf("Redacted kept a secret")
	}
	if c.REST.Token.Reveal() != restSecret {
		t.Error("Redacted changed the original")
	}
	wantNoSecret(t, "Redacted", fmt.Sprintf("%#v", r.Machine.Redis.Password.Reveal()))
	// Every Secret of a Config, whichever section holds it.
	all := conf.DefaultConfig()
	all.Machine.Etcd.Password, all.Segment.DSN, all.Segment.Redis.Password = "etcd-pw", "u:dsn-pw@tcp(h:1)/d", "seg-pw"
	if r := all.Redacted(); r.Machine.Etcd.Password.Reveal() != "[redacted]" || r.Segment.DSN.Reveal() != "[redacted]" ||
		r.Segment.Redis.Password.Reveal() != "[redacted]" {
		t.Errorf("Redacted kept a secret of etcd or segment")
	}

	if s := conf.Secret("").String(); s != "" {
		t.Errorf("empty secret prints %q; want \"\"", s)
	}
}

func TestRedactedIsACopy(t *testing.T) {
	c := conf.DefaultConfig()
	c.Machine.ID = intp(5)
	r := c.Redacted()
	r.Machine.Providers[0] = "k8s"
	r.Machine.IPTable["10.0.0.1"] = 1
	*r.Machine.ID = 6
	r.Machine.Redis.Addrs[0] = "x:1"
	if c.Machine.Providers[0] != "static" || len(c.Machine.IPTable) != 0 || *c.Machine.ID != 5 ||
		c.Machine.Redis.Addrs[0] != "127.0.0.1:6379" {
		t.Error("Redacted shares state with the original")
	}
}

// Every key prints: a new field type that the printer does not know would
// show as "?".
func TestStringShowsEveryKey(t *testing.T) {
	c := conf.DefaultConfig()
	c.Machine.ID = intp(3)
	c.Machine.IPTable = map[string]int{"10.0.0.2": 2, "10.0.0.1": 1}
	s := c.String()
	for _, k := range conf.Keys() {
		if !strings.Contains(s, k+"=") {
			t.Errorf("String() lacks %s", k)
		}
	}
	for _, want := range []string{" machine.id=3 ", ` machine.ip_table="10.0.0.1=1,10.0.0.2=2" `, " machine.server_range=924-1023 ",
		` id.epoch="" `, " machine.redis.lease_ttl=15s "} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q: %s", want, s)
		}
	}
	if strings.Contains(s, "=?") {
		t.Errorf("String() has an unknown type: %s", s)
	}
}

func TestLogger(t *testing.T) {
	c := conf.DefaultConfig()
	c.Log.Level, c.Log.Format = "warn", "json"
	var buf bytes.Buffer
	log := c.Logger(&buf)
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["msg"] != "shown" {
		t.Errorf("log %q: want one JSON line with msg shown (%v)", buf.String(), err)
	}

	c.Log.Level, c.Log.Format = "debug", "text"
	buf.Reset()
	c.Logger(&buf).Debug("dbg")
	if !strings.HasPrefix(buf.String(), "time=") || !strings.Contains(buf.String(), "msg=dbg") {
		t.Errorf("text log %q", buf.String())
	}
	for lv, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn,
		"error": slog.LevelError, "bogus": slog.LevelInfo} {
		if got := (conf.LogConfig{Level: lv}).SlogLevel(); got != want {
			t.Errorf("SlogLevel(%q) = %v; want %v", lv, got, want)
		}
	}
}

func TestEmbed(t *testing.T) {
	c := conf.DefaultConfig()
	c.TimeGuard.DataDir = t.TempDir()
	c.ID.Layout = core.Vesta
	c.Machine.ID = intp(0)
	ec, err := c.EmbedConfig()
	if err != nil {
		t.Fatal(err)
	}
	if ec.Machine.Static == nil || *ec.Machine.Static != 0 || ec.Machine.EmbeddedRange != c.Machine.EmbeddedRange || ec.DataDir != c.TimeGuard.DataDir ||
		ec.Layout != core.Vesta || ec.MaxBorrow != c.ID.MaxBorrow || ec.GuardWindow != c.TimeGuard.GuardWindow ||
		ec.MaxStartupWait != c.TimeGuard.MaxStartupWait || ec.Logger != nil {
		t.Errorf("Embed() = %+v", ec)
	}
	is, err := embed.Open(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	id, err := is.NextID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e := is.Explain(id); e.Machine != 0 || e.Method != core.Embedded {
		t.Errorf("issued %+v", e)
	}

	c.Machine.ID = intp(1000) // a server-range ID: embedded use refuses it
	if ec, err := c.EmbedConfig(); err != nil {
		t.Fatal(err)
	} else if err := ec.Validate(); err == nil {
		t.Error("embedded use of a server-range ID validated")
	}
	c.Log.Level = "loud"
	if _, err := c.EmbedConfig(); err == nil {
		t.Error("Embed of an invalid config succeeded")
	}
}
