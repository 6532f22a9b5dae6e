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

// MarkClean writes a clean-shutdown marker vouching for the file at path
// as it is (its last transaction), so a test can open what a killed
// process left and look at it: the crash test of group commit checks
// that such a file holds a whole prefix of the applied entries.
func MarkClean(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	txid := lastTxID(db)
	if err := db.Close(); err != nil {
		return err
	}
	return writeMarker(path+".state", marker{State: markerClean, TxID: txid})
}
