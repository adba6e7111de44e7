// Package openapilint checks the OpenAPI document the REST server serves,
// two ways: with a strict validator (kin-openapi), the document itself and
// every example in it against its schema; and with a strict linter
// (speakeasy's OpenAPI linter, its recommended ruleset: semantic, style and
// basic OWASP rules, with the license, contact and tag rules raised to
// warnings), which must find no error and no warning. It is a module of
// its own, so neither stays in the product's go.mod; scripts/test.sh
// (make test, CI) runs it.
package openapilint
