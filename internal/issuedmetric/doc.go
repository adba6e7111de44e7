// Package issuedmetric holds vesta_ids_issued_total{method}, the one count
// of the IDs a process issued, by publish method (embedded, central, rest).
// Every issuer of a process adds to the same collector of a registry: the
// servers count the IDs they answer as they answer them; an embedded
// issuer's generator, which issues embedded IDs only, is read when
// scraped, so counting costs its hot path nothing.
package issuedmetric
