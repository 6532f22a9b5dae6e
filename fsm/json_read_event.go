package fsm

// The one-pass path of event JSON (API batches): jsonReader decodes what
// clients send without reflection and hands anything unusual to
// encoding/json, so what is accepted, what is refused and every error
// message stay those of encoding/json (FuzzEventJSONMatchesStandard, and
// cluster's FuzzDecodeBatchMatchesReference for whole requests).

// ReadEventsJSON decodes a JSON array of at most limit events at the start
// of b (after whitespace) and returns them with the bytes it took. ok is
// false when the array is not in the form the reader takes, holds more than
// limit events or is not JSON: the caller then decodes with encoding/json
// (Event.UnmarshalJSON), which accepts or refuses and says why. When ok,
// the events are exactly what encoding/json decodes.
func ReadEventsJSON(b []byte, limit int) (events []Event, n int, ok bool) {
	r := jsonReader{b: b}
	events = []Event{} // [] decodes to an empty slice, not nil
	r.array(func() {
		if len(events) == limit {
			r.bad = true
			return
		}
		if len(events) == 1 {
			events = sizeFor(events, limit, r.i, len(b))
		}
		events = append(events, Event{})
		r.event(&events[len(events)-1])
	})
	if r.bad {
		return nil, 0, false
	}
	return events, r.i, true
}

// sizeFor makes room for the rest of the array if its events are as long
// as the first (which ends at off): growing a slice of 1,000 events one
// append at a time would copy it ten times.
func sizeFor(events []Event, limit, off, size int) []Event {
	out := make([]Event, len(events), min(limit, len(events)+(size-off)/max(off, 1)+1))
	copy(out, events)
	return out
}

// eventTypeByName is ParseEventType without allocating its argument.
var eventTypeByName = func() map[string]EventType {
	m := make(map[string]EventType, len(typeNames))
	for i, n := range typeNames {
		if n != "" {
			m[n] = EventType(i)
		}
	}
	return m
}()

// event decodes one event into e. A body before the type is skipped and
// decoded once the type is known. "seq" and "link", refused on client
// events, leave the subset like every unknown key.
func (r *jsonReader) event(e *Event) {
	bodyAt, bodyEnd := -1, 0
	r.object(func(k []byte) int {
		f := field(k, "id", "type", "job_id", "tenant", "region", "node", "hlc", "fence", "body")
		switch f {
		case 0:
			r.check(e.ID.UnmarshalText(r.text()))
		case 1:
			t, ok := eventTypeByName[string(r.text())]
			r.bad = r.bad || !ok
			e.Type = t
		case 2:
			e.JobID = r.str(slotJobID)
		case 3:
			e.Tenant = r.str(slotTenant)
		case 4:
			e.Region = r.str(slotRegion)
		case 5:
			e.Node = r.str(slotNode)
		case 6:
			r.check(e.HLC.UnmarshalText(r.text()))
		case 7:
			e.Fence = r.uint(64)
		case 8:
			if e.Type != 0 {
				e.Body = r.body(e.Type)
			} else {
				bodyAt = r.skipObject()
				bodyEnd = r.i
			}
		}
		return f
	})
	if bodyAt >= 0 && !r.bad && e.Type != 0 {
		end := r.i
		r.i = bodyAt
		e.Body = r.body(e.Type)
		if r.i != bodyEnd {
			r.bad = true
		}
		r.i = end
	}
	if e.Body == nil {
		r.bad = true // no body or no type: encoding/json explains
	}
}

// field returns the position of key among names, -1 if absent.
func field(key []byte, names ...string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	return -1
}
