package conf

// The configuration lists providers by name (machine.providers), and
// vesta serves every one: link the stores of the leasing providers, which
// package machineid leaves to the programs that use them.
import (
	_ "github.com/vesta-go/vesta/machineid/etcdlease"
	_ "github.com/vesta-go/vesta/machineid/redislease"
)
