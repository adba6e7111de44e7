// Package nettest gives tests network addresses with known behaviour,
// serves a server on loopback for the length of a test (Serve), puts a
// slow network between two ends (Forward), and reads whole HTTP answers
// (Do, Get).
package nettest
