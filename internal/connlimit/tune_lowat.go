//go:build linux || darwin

package connlimit

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// notSentLowat is the most a connection's kernel send queue holds that
// is not yet on the wire (TCP_NOTSENT_LOWAT). Without it the kernel grows
// a socket's send buffer up to megabytes (tcp_wmem) and takes a whole
// answer from a peer that does not read, which then holds it out of the
// server's sight until the idle timeout; with it, such a write waits in
// the server, where Hold counts it and the write deadline ends it. Bytes
// in flight are not bound by it, so a reader far away still gets a full
// window; 16 KiB is what HTTP/2 servers commonly use.
const notSentLowat = 16 << 10

// tune sets the socket options of an accepted connection; a failure is
// not an error (the connection is served as the kernel made it).
func tune(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, notSentLowat)
	})
}
