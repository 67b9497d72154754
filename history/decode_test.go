package history

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeEvent checks that the fast path of decodeEvent agrees with encoding/json on
// every input: same event, and an error exactly when json.Unmarshal errs.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"id":"n1/ab/1","type":"invoke","kind":"commit","node":"n1","time":1796226096654895780,"token":3,"from":10,"to":12,"events":2}`,
		`{"id":"x","type":"ok","kind":"load","node":"n1","time":3,"cursor":-1,"token":9223372036854775807}`,
		`{"id":"n1/ab/9","type":"info","kind":"step-down","node":"n1","time":1796226096654895780,"token":3,"reason":"lease-expired","lease_ns":1900000000}`,
		`{"id":"x","type":"ok","time":-9223372036854775808}`,
		`{"ID":"x","Type":"ok"}`,
		`{"id":"x","time":1e3}`,
		`{"id":"x","time":01}`,
		`{"id":"x","time":9223372036854775808}`,
		`{"id":"\u00e9","error":"a\"b"}`,
		`{"id":"x","extra":{"a":1}}`,
		`{"id":null}`,
		` { "id" : "x" , "time" : 5 } `,
		`{}`, `{"id":"x",}`, `{"id":"x"}x`, `{"id":"x"`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want Event
		werr := json.Unmarshal(b, &want)
		var got Event
		gerr := decodeEvent(b, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: json err %v, decodeEvent err %v", b, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n json %+v\n fast %+v", b, want, got)
		}
	})
}

func BenchmarkDecodeEvent(b *testing.B) {
	line := []byte(`{"id":"n1/9be1c2aa41f0/31","type":"ok","kind":"commit","node":"n1","time":1764688800130210000,"token":12,"from":480,"to":500,"events":20}`)
	b.Run("fast", func(b *testing.B) {
		var e Event
		for b.Loop() {
			_ = decodeEvent(line, &e)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		var e Event
		for b.Loop() {
			e = Event{}
			_ = json.Unmarshal(line, &e)
		}
	})
}
