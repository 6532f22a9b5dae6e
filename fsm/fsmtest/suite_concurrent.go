package fsmtest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// RunConcurrentReads: reads (snapshots, lists, chain checks, digests) run
// while batches are applied, and each sees one consistent state: every
// snapshot taken mid-stream restores (which re-verifies its chains and
// its digest). Run it with -race.
func RunConcurrentReads(t *testing.T, newStore NewStore) {
	led, _ := NewLedger(t, newStore)
	done := make(chan struct{})
	var applyErr error
	go func() {
		defer close(done)
		gen := NewGen(61)
		for index := uint64(1); index <= 150; index++ {
			batch := make([]fsm.Event, 20)
			for i := range batch {
				batch[i] = gen.Next()
			}
			if _, err := led.Apply(index, batch); err != nil {
				applyErr = err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for reader := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rounds := 0; ; rounds++ {
				select {
				case <-done:
					if rounds > 0 {
						return
					}
				default:
				}
				if err := readOnce(led, newStore(t), reader); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if applyErr != nil {
		t.Fatal(applyErr)
	}
}

func readOnce(led *fsm.Ledger, fresh fsm.Store, reader int) error {
	if reader == 0 {
		var snap bytes.Buffer
		if err := led.Snapshot(&snap); err != nil {
			return err
		}
		restored, err := fsm.New(fsm.Config{Store: fresh})
		if err != nil {
			return err
		}
		return restored.Restore(&snap)
	}
	if _, err := led.ListJobs(fsm.JobQuery{Tenant: "acme", Limit: 10}); err != nil {
		return err
	}
	if _, err := led.VerifyChain("acme"); err != nil {
		return err
	}
	_, _, err := led.Digest()
	return err
}
