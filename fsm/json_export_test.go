package fsm

// Hooks for the external tests of the one-pass JSON reader.

// ReadEventJSONFast is the reader alone: ok is false where
// Event.UnmarshalJSON falls back to encoding/json.
func ReadEventJSONFast(b []byte) (Event, bool) {
	r := jsonReader{b: b}
	var e Event
	r.event(&e)
	return e, r.atEnd()
}

// UnmarshalEventStandard is Event.UnmarshalJSON without the reader.
func UnmarshalEventStandard(e *Event, b []byte) error { return e.unmarshalStandard(b) }
