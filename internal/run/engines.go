package run

// KnowsEngine reports whether a run asking for the named engine can be
// routed to it, so a request naming another is refused before it starts a
// run. An engine that does not say which names it routes knows every name.
func (s *Service) KnowsEngine(name string) bool {
	r, ok := s.eng.(interface{ Has(name string) bool })
	return !ok || r.Has(name)
}
