package history_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/fenceline/fenceline/history"
)

// FuzzRead checks that Read never panics, and that whatever it accepts re-encodes (with
// a Recorder) into a history that reads back to the same events.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		`{"id":"n1-1","type":"invoke","kind":"commit","node":"n1","time":1,"token":3,"from":10,"to":12,"events":2}` + "\n" +
			`{"id":"n1-1","type":"ok","kind":"commit","node":"n1","time":2}` + "\n",
		`{"id":"n2-7","type":"info","kind":"commit","node":"n2","time":5,"error":"i/o timeout"}`,
		`{"id":"f-1","type":"invoke","kind":"fault","node":"redis","time":9,"fault":"redis-restart"}`,
		`{"id":"sd","type":"info","kind":"step-down","node":"n3","time":4,"token":2,"reason":"lease-expired"}` + "\n\n",
		`{"id":"x","type":"ok","kind":"load","node":"n1","time":3,"cursor":-1,"token":9223372036854775807}`,
		`{"id":"x","type":"bogus","kind":"load","node":"n1","time":3}`,
		`{"id":"","type":"ok","kind":"load","node":"n1","time":3}`,
		`{"id":"x","type":"ok","kind":"load","node":"n1","time":0}`,
		`{"id":"x","type":"ok","kind":"load","node":"n1","time":1e3}`,
		`{"id":"\u00e9\xff","type":"ok","kind":"load","node":"n1","time":3}`,
		`not json`,
		`{"id":"x"`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := history.Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for _, e := range evs {
			if err := e.Validate(); err != nil {
				t.Fatalf("Read returned an invalid event %+v: %v", e, err)
			}
		}
		var buf bytes.Buffer
		rec := history.NewRecorder(&buf)
		for _, e := range evs {
			rec.Record(e)
		}
		if err := rec.Err(); err != nil {
			t.Fatal(err)
		}
		again, err := history.Read(&buf, "re-encoded")
		if err != nil {
			t.Fatalf("re-encoded history does not read: %v\n%s", err, buf.Bytes())
		}
		if len(evs) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(evs, again) {
			t.Fatalf("re-encoded history differs:\n%+v\n%+v", evs, again)
		}
	})
}
