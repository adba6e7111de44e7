package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// Bad flags are refused with exit status 2 and a message naming the flag,
// before anything is built or run.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rounds", "0"}, "-rounds 0; want 1-50"},
		{[]string{"-rounds", "51"}, "-rounds 51; want 1-50"},
		{[]string{"-rounds", "three"}, `invalid value "three" for flag -rounds`},
		{[]string{"-duration", "10ms"}, "-duration 10ms; want 100ms-10m0s"},
		{[]string{"-duration", "1h"}, "-duration 1h0m0s; want 100ms-10m0s"},
		{[]string{"-duration", "3"}, `invalid value "3" for flag -duration`},
		{[]string{"-callers", "0"}, "-callers 0; want 1-1024"},
		{[]string{"-callers", "2000"}, "-callers 2000; want 1-1024"},
		{[]string{"-only", "embedded,grpc"}, `-only "embedded,grpc": "grpc" is no group; want some of embedded, central, rest`},
		{[]string{"-only", ""}, `-only "": "" is no group`},
		{[]string{"-rev", ""}, "-rev is empty"},
		{[]string{"-rev", "--all"}, `-rev "--all": not a revision`},
		{[]string{"-revision", "v1"}, "flag provided but not defined: -revision"},
		{[]string{"v1.2.0"}, `unexpected argument "v1.2.0"`},
		{[]string{"-smoke", "-rounds", "-1"}, "-rounds -1; want 1-50"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
				t.Fatalf("exit %d, stderr %q, stdout %q; want exit 2 and %q", code, stderr.String(), stdout.String(), tc.want)
			}
		})
	}
}

func TestFlagDefaults(t *testing.T) {
	o, err := parse(nil, &bytes.Buffer{})
	if err != nil || o.rounds != 3 || o.duration != 3*time.Second || o.callers != 64 || o.rev != "" || !slices.Equal(o.only, groups) {
		t.Fatalf("defaults %+v, %v", o, err)
	}
	o, err = parse([]string{"-smoke", "-only", "rest, embedded,rest"}, &bytes.Buffer{})
	if err != nil || o.rounds != 1 || o.duration != 300*time.Millisecond || o.rev != "HEAD" || !slices.Equal(o.only, []string{"rest", "embedded"}) {
		t.Fatalf("-smoke: %+v, %v", o, err)
	}
	o, err = parse([]string{"-smoke", "-rounds", "2", "-rev", "main~3"}, &bytes.Buffer{})
	if err != nil || o.rounds != 2 || o.rev != "main~3" {
		t.Fatalf("-smoke with flags: %+v, %v", o, err)
	}
}

// A revision that does not exist is refused naming -rev (this test runs
// in the repository).
func TestUnknownRevision(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-rev", "no-such-revision-anywhere", "-only", "embedded"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), `-rev "no-such-revision-anywhere": no such revision`) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestRatiosAndVerdicts(t *testing.T) {
	r := ratios([]float64{10, 12, 9}, []float64{40, 30, 0})
	if !slices.Equal(r, []float64{0.25, 0.4}) {
		t.Fatalf("ratios %v", r)
	}
	for _, tc := range []struct {
		xs   []float64
		goal string
		want string
	}{
		{[]float64{0.25, 0.3}, "<= 0.35", "<= 0.35: met"},
		{[]float64{0.25, 0.4}, "<= 0.35", "<= 0.35: met in 1 of 2 rounds"},
		{[]float64{0.5}, "<= 0.35", "<= 0.35: **not met**"},
		{[]float64{3.1, 3}, ">= 3", ">= 3: met"},
		{nil, ">= 3", ">= 3: no data"},
		{[]float64{1}, "", "–"},
	} {
		if got := verdict(tc.xs, tc.goal); got != tc.want {
			t.Errorf("verdict(%v, %q) = %q; want %q", tc.xs, tc.goal, got, tc.want)
		}
	}
	if got := span([]float64{244000, 272500}, "calls/s"); got != "244.0k–272.5k" {
		t.Errorf("span = %q", got)
	}
	if got := span([]float64{0.913, 0.9}, ""); got != "0.90–0.91" {
		t.Errorf("span = %q", got)
	}
	if got := span(nil, "ns"); got != "–" {
		t.Errorf("span(nil) = %q", got)
	}
	if got := order(1, []int{1, 2, 3}); !slices.Equal(got, []int{3, 2, 1}) {
		t.Errorf("order(1) = %v", got)
	}
}

func TestBenchLine(t *testing.T) {
	for line, want := range map[string][]string{
		"BenchmarkCost/serial/vesta-2         	65272742	        17.50 ns/op":             {"Cost/serial/vesta", "17.50", ""},
		"BenchmarkBatch/vesta-2         	  133377	      9703 ns/op	         9.703 ns/id": {"Batch/vesta", "9703", "9.703"},
		"BenchmarkCost/serial/vesta 	1000	 31.4 ns/op":                                   {"Cost/serial/vesta", "31.4", ""},
	} {
		m := benchLine.FindStringSubmatch(line)
		if m == nil || !slices.Equal(m[1:], want) {
			t.Errorf("%q: %q; want %q", line, m, want)
		}
	}
}
