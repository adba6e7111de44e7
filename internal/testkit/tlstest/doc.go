// Package tlstest makes a throwaway certificate authority for tests of the
// TLS and mutual-TLS paths of the central server, the client, the REST
// server and `vesta serve`: a CA, a server certificate for 127.0.0.1 and a
// client certificate, valid for an hour around now.
package tlstest
