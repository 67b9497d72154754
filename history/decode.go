package history

import (
	"encoding/json"
	"unicode/utf8"
)

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

// decodeAudit parses one line of an audit file, as builder.decode does a history line.
// The two strings of an entry that differ on every line, its stream id and op id, are
// added to ids and their spans returned (a.StreamID and a.Op are left empty): a long
// run's audit has a million entries, and a string of their own would be two
// allocations each. Node and result repeat: they are interned in strs.
func decodeAudit(b []byte, a *AuditEntry, ids *arena, strs *interner) (sid, op span, err error) {
	*a = AuditEntry{}
	var sidb, opb []byte
	ok := decodeFlat(b, func(key, str []byte, n int64, isStr bool) bool {
		if isStr {
			switch string(key) {
			case "stream_id":
				sidb = str
			case "op":
				opb = str
			case "node":
				a.Node = strs.get(str, 0)
			case "result":
				a.Result = strs.get(str, 1)
			case "kind":
				a.Kind = Kind(strs.get(str, 2))
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
		return ids.add(sidb), ids.add(opb), nil
	}
	*a = AuditEntry{}
	if err := json.Unmarshal(b, a); err != nil {
		return 0, 0, err
	}
	sid, op = ids.add([]byte(a.StreamID)), ids.add([]byte(a.Op))
	a.StreamID, a.Op = "", ""
	return sid, op, nil
}

// interner hands out one string for each distinct value of a few fields that repeat
// on every line; last[k] is the value field k had last, tried before the map.
type interner struct {
	m    map[string]string
	last [3]string
}

func (in *interner) get(s []byte, k int) string {
	if string(s) == in.last[k] {
		return in.last[k]
	}
	v, ok := in.m[string(s)]
	if !ok {
		if in.m == nil {
			in.m = map[string]string{}
		}
		v = string(s)
		in.m[v] = v
	}
	in.last[k] = v
	return v
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
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= 0x80:
			ascii = false
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
