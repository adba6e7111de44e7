// The programs of libdeps_test.go: the first program a user writes (print
// one ID), once per way of running the generator. This file is what they
// share; a build tag picks the files that make the issuer:
//
//	(none)  embed.go           an embedded issuer on a static machine ID:
//	                           the program a new user writes first
//	client  client.go          a client of central servers, its embedded
//	                           fallback on a static machine ID (the
//	                           fallback's ID while no server answers)
//	redis   embed.go redis.go  an embedded issuer on a Redis lease
//	etcd    embed.go etcd.go   an embedded issuer on an etcd lease
//	prom    embed.go prom.go   an embedded issuer on a static machine ID,
//	                           its Prometheus metrics served on /metrics
//
// libdeps_test.go holds what each links to the goals (go list -deps -tags
// TAG); tools/peerbench's sizes_test.go builds each as a module of its own.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/vesta-go/vesta/core"
)

// issuer is what embed.Issuer and client.Client both are.
type issuer interface {
	NextID(context.Context) (core.ID, error)
	Close() error
}

// afterID, when a variant sets it, is given the issuer once its ID is
// printed.
var afterID func(issuer)

func main() {
	ctx := context.Background()
	is, err := open(ctx)
	exitOn(err)
	defer is.Close()
	id, err := is.NextID(ctx)
	exitOn(err)
	fmt.Println(id)
	if afterID != nil {
		afterID(is)
	}
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
