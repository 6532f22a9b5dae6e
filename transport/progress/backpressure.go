package progress

// Level is the AD-37 backpressure level a manager returns on the worker's
// heartbeat, set by the fill of its receive queue.
type Level uint8

// The levels, in order of pressure; their numbers are the values of
// strata_progress_backpressure_level.
const (
	// LevelNone: send as usual.
	LevelNone Level = iota
	// LevelThrottle (fill ≥ 70 %): send less often.
	LevelThrottle
	// LevelBatch (fill ≥ 85 %): pack more updates per frame, send less often.
	LevelBatch
	// LevelReject (fill ≥ 95 %): pause progress until the level drops;
	// nothing is lost, the counters are cumulative.
	LevelReject
)

// The fill thresholds of the levels (AD-37).
const (
	ThrottleFill = 0.70
	BatchFill    = 0.85
	RejectFill   = 0.95
)

// LevelForFill maps a queue fill in [0, 1] to its level.
func LevelForFill(fill float64) Level {
	switch {
	case fill >= RejectFill:
		return LevelReject
	case fill >= BatchFill:
		return LevelBatch
	case fill >= ThrottleFill:
		return LevelThrottle
	}
	return LevelNone
}

// String returns the level's name as DESIGN §10 spells it.
func (l Level) String() string {
	switch l {
	case LevelNone:
		return "NONE"
	case LevelThrottle:
		return "THROTTLE"
	case LevelBatch:
		return "BATCH"
	case LevelReject:
		return "REJECT"
	}
	return "UNKNOWN"
}
