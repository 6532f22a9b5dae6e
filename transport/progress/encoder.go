package progress

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash"
)

// EncoderConfig says who sends and how large a frame may be.
type EncoderConfig struct {
	// Worker and KeyID identify the sender; Key is its registration key
	// (at least MinKeyBytes).
	Worker string
	KeyID  uint32
	Key    []byte
	// MaxFrameBytes bounds every frame, MAC included; default
	// DefaultMaxFrameBytes, within MinMaxFrameBytes..LimitMaxFrameBytes.
	MaxFrameBytes int
}

// Validate fills the defaults and checks the bounds.
func (c *EncoderConfig) Validate() error {
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.MaxFrameBytes < MinMaxFrameBytes || c.MaxFrameBytes > LimitMaxFrameBytes {
		return fmt.Errorf("%w: MaxFrameBytes %d not in %d..%d", ErrInvalid, c.MaxFrameBytes, MinMaxFrameBytes, LimitMaxFrameBytes)
	}
	return validateHeader(c.Worker, c.Key)
}

// Encoder packs updates into as few frames as fit MaxFrameBytes, numbering
// them from Seq 1. Not safe for concurrent use.
type Encoder struct {
	cfg EncoderConfig
	seq uint64
	mac hash.Hash
	buf []byte
	sum []byte
}

// NewEncoder returns an encoder for cfg (validated, defaults filled).
func NewEncoder(cfg EncoderConfig) (*Encoder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	key := append([]byte(nil), cfg.Key...)
	cfg.Key = key
	return &Encoder{
		cfg: cfg,
		mac: hmac.New(sha256.New, key),
		buf: make([]byte, 0, cfg.MaxFrameBytes),
		sum: make([]byte, 0, sha256.Size),
	}, nil
}

// Seq returns the sequence number of the last frame encoded (0 before the
// first).
func (e *Encoder) Seq() uint64 { return e.seq }

// MaxFrameBytes returns the configured frame bound.
func (e *Encoder) MaxFrameBytes() int { return e.cfg.MaxFrameBytes }

// Encode sorts updates by workflow id (in place), packs them into frames
// and calls emit with each; the frame is only valid during the call. No
// updates make one empty frame (it still renews the worker's liveness). On
// an invalid update nothing is emitted; an error from emit stops encoding
// and is returned.
func (e *Encoder) Encode(updates []Update, emit func(frame []byte) error) error {
	if err := sortUpdates(updates); err != nil {
		return err
	}
	for i := range updates {
		if err := validateUpdate(&updates[i]); err != nil {
			return err
		}
	}
	limit := e.cfg.MaxFrameBytes - MACBytes
	e.start()
	count, prev := 0, ""
	for i := range updates {
		u := &updates[i]
		mark := len(e.buf)
		e.buf = appendUpdate(e.buf, prev, u)
		if len(e.buf) > limit || count == MaxUpdatesPerFrame {
			e.buf = e.buf[:mark]
			if err := e.finish(count, emit); err != nil {
				return err
			}
			e.start()
			count = 0
			e.buf = appendUpdate(e.buf, "", u) // fits: MinMaxFrameBytes
		}
		count++
		prev = u.Workflow
	}
	return e.finish(count, emit)
}

func (e *Encoder) start() {
	e.seq++
	e.buf = appendHeader(e.buf[:0], Header{KeyID: e.cfg.KeyID, Seq: e.seq, Worker: e.cfg.Worker})
}

func (e *Encoder) finish(count int, emit func([]byte) error) error {
	countOff := offWorker + len(e.cfg.Worker)
	e.buf = finishFrame(e.buf, 0, countOff, count, e.mac, e.sum)
	return emit(e.buf)
}
