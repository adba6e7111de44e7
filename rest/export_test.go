package rest

import (
	"time"

	"github.com/vesta-go/vesta/internal/peerrate"
)

// AuthPeers is the number of peers the limiter of failed authentications
// holds, and AuthPeersMax its cap.
func AuthPeers(s *Server) int { return s.authLim.fails.Len() }

const AuthPeersMax = authPeers

// UnlimitAuth lifts the limit on failed authentications, for a test that
// fails many on purpose; call it before serving.
func UnlimitAuth(s *Server) { s.authLim.fails = peerrate.New(1<<20, authEvery, authPeers) }

// SetLeafZone sets the zone of /decodeSnowflakeId's dates; call it before
// serving.
func SetLeafZone(s *Server, loc *time.Location) { s.leafZone = loc }

// WaitingCalls is how many calls wait at the sequence's ceiling, so that a
// test that asserts their order queues them before it moves the clock.
func WaitingCalls(s *Server) int {
	_, calls := s.share.Waiting()
	return calls
}
