package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressInterval is how often the bar is redrawn.
const progressInterval = 200 * time.Millisecond

// startProgressBar draws a bar to w until the returned stop is called: over
// requests when the run is bounded by a count, else over its duration. A
// nil w draws nothing.
func startProgressBar(w io.Writer, p *Progress, requests int64, duration time.Duration) (stop func()) {
	if w == nil {
		return func() {}
	}
	limit := requests
	if limit == 0 {
		limit = int64(duration / time.Millisecond)
	}
	bar := progressbar.NewOptions64(limit,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(progressInterval),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
	)
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				_ = bar.Finish()
				return
			case <-tick.C:
			}
			ok, failed := p.OK.Load(), p.Failed.Load()
			elapsed := time.Since(start)
			desc := fmt.Sprintf("%d ok, %d failed, %.0f req/s", ok, failed, float64(ok)/elapsed.Seconds())
			if late := p.Late.Load(); late > 0 {
				desc += fmt.Sprintf(", %d late", late)
			}
			bar.Describe(desc)
			if requests > 0 {
				_ = bar.Set64(ok + failed)
			} else {
				_ = bar.Set64(min(int64(elapsed/time.Millisecond), limit))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
