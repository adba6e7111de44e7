// Package openapilint checks the OpenAPI document the REST server serves
// with a strict validator (kin-openapi): the document itself, and every
// example in it against its schema. It is a module of its own, so the
// validator stays out of the product's go.mod; scripts/test.sh runs it.
package openapilint
