package history

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeEvent parses one history line into e. Histories are large (a million operations
// is two million lines) and encoding/json spends most of a check's load time on them, so
// lines of the shape Record writes — a flat object of known keys with plain strings and
// integers — are parsed here directly; anything else (escapes, other keys, floats, null)
// goes to encoding/json, so the result is always what json.Unmarshal would give.
func decodeEvent(b []byte, e *Event) error {
	if fastDecode(b, e) {
		return nil
	}
	*e = Event{}
	return json.Unmarshal(b, e)
}

func fastDecode(b []byte, e *Event) bool {
	*e = Event{}
	return decodeFlat(b, func(key, str []byte, n int64, isStr bool) bool {
		if isStr {
			return setString(e, key, str)
		}
		return setInt(e, key, n)
	})
}

// decodeFlat walks a flat JSON object of plain strings and integers, calling set for each
// member. It returns false, having possibly called set, for anything else.
func decodeFlat(b []byte, set func(key, str []byte, n int64, isStr bool) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return false
		}
		if b[i] == '"' {
			val, j, ok := plainString(b, i)
			if !ok || !set(key, val, 0, true) {
				return false
			}
			i = j
		} else {
			n, j, ok := plainInt(b, i)
			if !ok || !set(key, nil, n, false) {
				return false
			}
			i = j
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// decodeAudit parses one line of an audit file, as decodeEvent does a history line.
// The two strings of an entry that differ on every line, its stream id and op id, are
// appended to arena and their spans returned (a.StreamID and a.Op are left empty): a
// long run's audit has a million entries, and a string of their own would be two
// allocations each.
func decodeAudit(b []byte, a *AuditEntry, arena *[]byte) (sid, op span, err error) {
	*a = AuditEntry{}
	mark := len(*arena)
	add := func(s []byte) span {
		sp := mkSpan(len(*arena), len(s))
		*arena = append(*arena, s...)
		return sp
	}
	ok := decodeFlat(b, func(key, str []byte, n int64, isStr bool) bool {
		if isStr {
			switch string(key) {
			case "stream_id":
				sid = add(str)
			case "op":
				op = add(str)
			case "node":
				a.Node = intern(str)
			case "result":
				a.Result = intern(str)
			default:
				return false
			}
			return true
		}
		switch string(key) {
		case "token":
			a.Token = n
		case "from":
			a.From = n
		case "to":
			a.To = n
		case "server_time_us":
			a.ServerTime = n
		default:
			return false
		}
		return true
	})
	if ok {
		return sid, op, nil
	}
	*a = AuditEntry{}
	*arena = (*arena)[:mark]
	if err := json.Unmarshal(b, a); err != nil {
		return 0, 0, err
	}
	sid, op = add([]byte(a.StreamID)), add([]byte(a.Op))
	a.StreamID, a.Op = "", ""
	return sid, op, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a string that starts at b[i] and has no escapes, control characters
// or invalid UTF-8; it returns the bytes between the quotes and the index after them.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// plainInt reads a JSON integer (no fraction, no exponent) that fits an int64.
func plainInt(b []byte, i int) (int64, int, bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var n uint64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + uint64(b[i]-'0')
		if n > 1<<63 || i-start > 18 {
			return 0, 0, false
		}
		i++
	}
	digits := i - start
	if digits == 0 || (digits > 1 && b[start] == '0') {
		return 0, 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, 0, false
	}
	if neg {
		return -int64(n), i, true
	}
	if n > 1<<63-1 {
		return 0, 0, false
	}
	return int64(n), i, true
}

func setString(e *Event, key, val []byte) bool {
	switch string(key) {
	case "id":
		e.ID = string(val)
	case "type":
		e.Type = Type(intern(val))
	case "kind":
		e.Kind = Kind(intern(val))
	case "node":
		e.Node = intern(val)
	case "error":
		e.Error = intern(val)
	case "reason":
		e.Reason = intern(val)
	case "fault":
		e.Fault = intern(val)
	default:
		return false
	}
	return true
}

func setInt(e *Event, key []byte, n int64) bool {
	switch string(key) {
	case "time":
		e.Time = n
	case "token":
		e.Token = n
	case "from":
		e.From = n
	case "to":
		e.To = n
	case "cursor":
		e.Cursor = n
	case "events":
		if int64(int(n)) != n {
			return false
		}
		e.Events = int(n)
	default:
		return false
	}
	return true
}

// interned holds the few strings that repeat on every line, so that reading a history
// does not allocate them two million times.
var interned = internTable()

func internTable() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		string(Invoke), string(OK), string(Fail), string(Info),
		string(KindLoad), string(KindCommit), string(KindAcquire), string(KindRenew),
		string(KindRelease), string(KindStepDown), string(KindFault),
		ErrStaleToken, ErrCursorConflict, ErrNotHeld, "ok",
		"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "redis",
	} {
		m[s] = s
	}
	return m
}

func intern(b []byte) string {
	if s, ok := interned[string(b)]; ok {
		return s
	}
	return string(b)
}
