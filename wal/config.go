package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for Config (DESIGN §5, §13).
const (
	DefaultSegmentBytes    = 64 << 20
	DefaultMaxBatchEntries = 1000
	DefaultMaxBatchBytes   = 1 << 20
	DefaultMaxBatchDelay   = 500 * time.Microsecond
	DefaultQueueEntries    = 65536
	DefaultQueueBytes      = 64 << 20

	// MinSegmentBytes is the smallest segment Validate accepts.
	MinSegmentBytes = 64 << 10
	// MaxSegmentBytes is the largest segment Validate accepts.
	MaxSegmentBytes = 1 << 40
)

// Config configures a WAL. Zero fields take the defaults above.
type Config struct {
	// Dir holds the segments and the checkpoint. Required. Nothing else
	// may write in it.
	Dir string
	// SegmentBytes is the size a segment is preallocated to; a record
	// larger than a segment is refused.
	SegmentBytes int64
	// MaxBatchEntries, MaxBatchBytes and MaxBatchDelay close a batch that
	// is still filling while the previous one is being written: whichever
	// is reached first. A batch also closes as soon as the writer is free.
	MaxBatchEntries int
	MaxBatchBytes   int
	MaxBatchDelay   time.Duration
	// QueueEntries and QueueBytes bound what has been appended and not yet
	// fsynced; beyond either, appends fail with ErrBackpressure.
	QueueEntries int
	QueueBytes   int
	// Retain lists the watermarks that hold segments back: Compact removes
	// a segment only when every record in it is at or below each of them.
	// Default: [Compacted].
	Retain []Level
	// FS is the file system; default OSFS.
	FS FS
	// Logger receives recovery and failure reports; default discards.
	Logger *slog.Logger
	// Registerer receives the strata_wal_* metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Validate fills the defaults of zero fields and checks c.
func (c *Config) Validate() error {
	c.fillDefaults()
	switch {
	case c.Dir == "":
		return errors.New("wal: config: Dir is required")
	case c.SegmentBytes < MinSegmentBytes || c.SegmentBytes > MaxSegmentBytes:
		return fmt.Errorf("wal: config: SegmentBytes %d outside [%d, %d]", c.SegmentBytes, MinSegmentBytes, int64(MaxSegmentBytes))
	case c.MaxBatchBytes < HeaderBytes || int64(c.MaxBatchBytes) > c.SegmentBytes:
		return fmt.Errorf("wal: config: MaxBatchBytes %d outside [%d, SegmentBytes %d]", c.MaxBatchBytes, HeaderBytes, c.SegmentBytes)
	case c.MaxBatchEntries < 1 || c.MaxBatchEntries > c.QueueEntries:
		return fmt.Errorf("wal: config: MaxBatchEntries %d outside [1, QueueEntries %d]", c.MaxBatchEntries, c.QueueEntries)
	case c.MaxBatchDelay < 0:
		return fmt.Errorf("wal: config: MaxBatchDelay %s is negative", c.MaxBatchDelay)
	case c.QueueBytes < c.MaxBatchBytes || c.QueueBytes < MaxRecordBytes:
		return fmt.Errorf("wal: config: QueueBytes %d below MaxBatchBytes %d or MaxRecordBytes %d", c.QueueBytes, c.MaxBatchBytes, MaxRecordBytes)
	}
	for _, l := range c.Retain {
		if l < Regional || l > Compacted {
			return fmt.Errorf("wal: config: Retain level %s is not a watermark", l)
		}
	}
	return nil
}

func (c *Config) fillDefaults() {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.MaxBatchEntries == 0 {
		c.MaxBatchEntries = DefaultMaxBatchEntries
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = min(DefaultMaxBatchBytes, int(c.SegmentBytes))
	}
	if c.MaxBatchDelay == 0 {
		c.MaxBatchDelay = DefaultMaxBatchDelay
	}
	if c.QueueEntries == 0 {
		c.QueueEntries = DefaultQueueEntries
	}
	if c.QueueBytes == 0 {
		c.QueueBytes = DefaultQueueBytes
	}
	if len(c.Retain) == 0 {
		c.Retain = []Level{Compacted}
	}
	if c.FS == nil {
		c.FS = OSFS{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// maxPayload is the largest payload that fits both the format and a segment.
func (c *Config) maxPayload() int {
	return int(min(int64(MaxPayloadBytes), c.SegmentBytes-HeaderBytes))
}
