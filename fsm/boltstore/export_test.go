package boltstore

import bolt "go.etcd.io/bbolt"

// WithStatistics returns cfg with bbolt's statistics on, so TxStats
// counts what the commits of a benchmark did.
func WithStatistics(cfg Config) Config {
	cfg.statistics = true
	return cfg
}

// TxStats returns the totals of every transaction committed or rolled
// back so far (zero unless opened WithStatistics).
func (s *Store) TxStats() bolt.TxStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.Stats().TxStats
}
