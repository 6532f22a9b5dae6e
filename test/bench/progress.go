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
	limit := requests
	if limit == 0 {
		limit = int64(duration / time.Millisecond)
	}
	return drawBar(w, limit, func(elapsed time.Duration) (string, int64) {
		ok, failed := p.OK.Load(), p.Failed.Load()
		desc := fmt.Sprintf("%d ok, %d failed, %.0f req/s", ok, failed, float64(ok)/elapsed.Seconds())
		if late := p.Late.Load(); late > 0 {
			desc += fmt.Sprintf(", %d late", late)
		}
		if requests > 0 {
			return desc, ok + failed
		}
		return desc, min(int64(elapsed/time.Millisecond), limit)
	})
}

// drawBar redraws a bar of limit steps to w every progressInterval, with
// the description and position state gives for the time elapsed, until
// the returned stop is called; a nil w draws nothing.
func drawBar(w io.Writer, limit int64, state func(elapsed time.Duration) (string, int64)) (stop func()) {
	if w == nil {
		return func() {}
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
			desc, pos := state(time.Since(start))
			bar.Describe(desc)
			_ = bar.Set64(pos)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
