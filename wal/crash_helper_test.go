package wal

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// The crash helper is this test binary started with crashHelperEnv set:
// TestMain runs crashHelperMain instead of the tests. It opens the WAL in
// the directory named by the environment, appends from many goroutines and
// prints a line for every append that returned, until it is killed.
const (
	crashHelperEnv = "STRATA_WAL_CRASH_HELPER"
	crashDirEnv    = "STRATA_WAL_CRASH_DIR"
	crashRunEnv    = "STRATA_WAL_CRASH_RUN"

	crashWriters      = 24
	crashSegmentBytes = 128 << 10
	// crashKeepBehind is how far behind the last LSN the helper moves the
	// COMPACTED watermark, so segments roll and get compacted while the
	// test runs.
	crashKeepBehind = 3000
)

// crashPayload is the payload writer w of run r appends as its seq-th
// record: the checker recomputes it from an acknowledgement line.
func crashPayload(run, writer, seq int) []byte {
	b := fmt.Appendf(nil, "run=%d writer=%d seq=%d|", run, writer, seq)
	for i := range (run*31 + writer*7 + seq) % 300 {
		b = append(b, byte('a'+(i+seq)%26))
	}
	return b
}

func crashHelperMain() int {
	dir := os.Getenv(crashDirEnv)
	run, err := strconv.Atoi(os.Getenv(crashRunEnv))
	if dir == "" || err != nil {
		fmt.Fprintln(os.Stderr, "crash helper: need", crashDirEnv, "and", crashRunEnv)
		return 2
	}
	w, err := Open(Config{Dir: dir, SegmentBytes: crashSegmentBytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper: open:", err)
		return 1
	}
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	fmt.Fprintf(out, "O %d\n", w.LastLSN())
	out.Flush()
	acks := make(chan string, 4096)
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Go(func() { crashWriter(w, run, g, acks) })
	}
	go crashCompactor(w)
	// Print acknowledgements as they come, flushing whenever the queue is
	// drained, until the process is killed.
	for line := range acks {
		out.WriteString(line)
		if len(acks) == 0 {
			out.Flush()
		}
	}
	wg.Wait()
	return 0
}

func crashWriter(w *WAL, run, g int, acks chan<- string) {
	for seq := 0; ; seq++ {
		r := Record{Type: 1 + uint8(seq%200), Payload: crashPayload(run, g, seq)}
		lsn, err := w.Append(context.Background(), r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash helper: append:", err)
			os.Exit(1)
		}
		acks <- fmt.Sprintf("A %d %d %d\n", lsn, g, seq)
	}
}

func crashCompactor(w *WAL) {
	for range time.Tick(5 * time.Millisecond) {
		last := w.LastLSN()
		if err := w.SetWatermark(Regional, last); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper: watermark:", err)
			os.Exit(1)
		}
		if last > crashKeepBehind && last-crashKeepBehind > w.Watermarks().Compacted {
			if err := w.SetWatermark(Compacted, last-crashKeepBehind); err != nil {
				fmt.Fprintln(os.Stderr, "crash helper: watermark:", err)
				os.Exit(1)
			}
		}
		if err := w.Compact(); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper: compact:", err)
			os.Exit(1)
		}
	}
}
