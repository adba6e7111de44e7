package main

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// wireLineRe is a line of docs/api.md's wire example: its name, its bytes
// in hex, and the message they hold as the page writes it.
var wireLineRe = regexp.MustCompile(`(?m)^(request|response) +((?:[0-9a-f]{2} )+) +(\[.*\])$`)

// docs/api.md's wire example is true: each line's bytes decode as
// MessagePack to the message written beside them, in the number of bytes
// the sentence above says, and the answer's ID is one `make run`'s
// server issues over RPC (method central, the Makefile's machine ID).
func TestAPIWireExample(t *testing.T) {
	files := repoFiles(t, "docs/api.md", "Makefile")
	page, makefile := []byte(files[0]), files[1]
	lines := wireLineRe.FindAllStringSubmatch(string(page), -1)
	if len(lines) != 2 || lines[0][1] != "request" || lines[1][1] != "response" {
		t.Fatalf("docs/api.md's wire example: %q; want a request line and a response line", lines)
	}
	var sizes []string
	var answer []any
	for _, l := range lines {
		b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(l[2]), " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, strconv.Itoa(len(b)))
		var msg []any
		if err := codec.NewDecoderBytes(b, &codec.MsgpackHandle{}).Decode(&msg); err != nil {
			t.Fatalf("%s: %v", l[1], err)
		}
		if got := render(msg); got != l[3] {
			t.Errorf("the %s's bytes hold %s; the page says %s", l[1], got, l[3])
		}
		answer = msg
	}
	if want := fmt.Sprintf("these %s bytes, and", sizes[0]); !strings.Contains(string(page), want) {
		t.Errorf("docs/api.md does not say %q", want)
	}
	if !regexp.MustCompile(`\(machine \d+, an ID of method central\) ` + sizes[1] + `:`).Match(page) {
		t.Errorf("docs/api.md does not say the answer's %s bytes", sizes[1])
	}
	id, ok := answer[len(answer)-1].(uint64)
	if !ok {
		t.Fatalf("the answer's result %v is not an unsigned ID", answer[len(answer)-1])
	}
	sorted, err := core.NewCodec(core.Sorted, time.Time{}) // make run's layout, the default
	if err != nil {
		t.Fatal(err)
	}
	e := sorted.Explain(core.ID(id))
	args := makeRunArgs(t, makefile)
	machine := args[slices.Index(args, "--machine")+1]
	if e.Method != core.Central || strconv.Itoa(int(e.Machine)) != machine {
		t.Errorf("the answer's ID %d is method %s, machine %d; make run's server answers RPC with method central, machine %s", id, e.Method, e.Machine, machine)
	}
	if !strings.Contains(string(page), "(machine "+machine+", an ID of method central)") {
		t.Errorf("docs/api.md does not name make run's machine %s", machine)
	}
}

// procRowRe is a row of docs/api.md's procedure table: its first cell.
var procRowRe = regexp.MustCompile("(?m)^\\| `(Vesta\\.\\w+)` \\|")

// docs/api.md's procedure table is the one list of the procedures (the
// design pages link to it): it names every procedure the server answers,
// once each, and no other.
func TestAPIProcedureTable(t *testing.T) {
	page := repoFiles(t, "docs/api.md")[0]
	var got []string
	for _, m := range procRowRe.FindAllStringSubmatch(page, -1) {
		got = append(got, m[1])
	}
	want := slices.Clone(wire.Procedures())
	slices.Sort(want)
	sorted := slices.Sorted(slices.Values(got))
	if !slices.Equal(sorted, want) {
		t.Errorf("docs/api.md's procedure table names %q; the server answers %q", got, want)
	}
}

// render writes a decoded message as docs/api.md does: [0, 1, "x", nil, []].
func render(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		return strconv.Quote(v)
	case []byte:
		return strconv.Quote(string(v))
	default:
		return fmt.Sprint(v)
	}
}
