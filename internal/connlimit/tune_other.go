//go:build !linux && !darwin

package connlimit

import "net"

// tune does nothing where TCP_NOTSENT_LOWAT is not known.
func tune(net.Conn) {}
