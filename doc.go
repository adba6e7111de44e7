// Package vesta is a 64-bit unique-ID issuer: IDs that are unique, numeric,
// sort by time and decode back into when and where they were made.
//
// One generator (package core) is published three ways: in-process (package
// embed), by a central MessagePack-RPC server (package central, called
// through package client) and by a REST server (package rest). Issuer is the
// interface an application codes against, so it can move between the
// embedded and central publish methods by configuration alone.
package vesta
