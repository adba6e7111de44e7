package central

// Spawn makes s serve issuing calls on goroutines, for the benchmark that
// compares that with the inline fast path: "always" lets each goroutine
// write its answer, "batched" writes answers once per batch of requests.
func Spawn(s *Server, mode string) {
	switch mode {
	case "always":
		s.spawn = spawnAlways
	case "batched":
		s.spawn = spawnBatched
	}
}
