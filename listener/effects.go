package listener

import (
	"fmt"
	"strconv"
)

// A Write is one Redis write of a batch's effects, applied by the fenced commit script
// after the token and cursor checks, in the same atomic step. The set is closed: HIncrBy,
// HSet, Set, RPush, XAdd and Del make them. Keys are names under the election's hash
// tag: key "balances" of election "orders" is the Redis key "{orders}:balances"
// (Keys.Key); "cursor", "audit", "lock" and "token" are the store's and the election's
// own and refused.
//
// The script checks every write of a batch before it makes the first, so that a batch
// is applied whole or not at all (Redis does not roll a script back): a key of the wrong
// type, or a hash field that HINCRBY could not add to, rejects the whole batch as
// bad-argument (RejectedError wrapping ErrInvalidBatch).
type Write struct {
	cmd  string
	key  string
	args []string
}

// MaxWriteValues bounds the values of one RPush and the field-value pairs of one XAdd.
const MaxWriteValues = 1000

// HIncrBy adds n, within ±MaxExactInt, to field of hash key. The field's value must stay
// an integer of at most 18 digits; a batch's increments of one field must sum, at every
// step, within ±MaxExactInt.
func HIncrBy(key, field string, n int64) Write {
	return Write{cmd: "HINCRBY", key: key, args: []string{field, strconv.FormatInt(n, 10)}}
}

// HSet sets field of hash key to value.
func HSet(key, field, value string) Write {
	return Write{cmd: "HSET", key: key, args: []string{field, value}}
}

// Set sets string key to value (whatever the key held before).
func Set(key, value string) Write { return Write{cmd: "SET", key: key, args: []string{value}} }

// RPush appends values (1..MaxWriteValues) to list key.
func RPush(key string, values ...string) Write {
	return Write{cmd: "RPUSH", key: key, args: values}
}

// XAdd appends an entry with an automatic id and fields field1, value1, field2, ...
// (1..MaxWriteValues pairs) to stream key.
func XAdd(key string, fieldValues ...string) Write {
	return Write{cmd: "XADD", key: key, args: fieldValues}
}

// Del deletes key.
func Del(key string) Write { return Write{cmd: "DEL", key: key} }

// String shows the write as a Redis command, for errors and logs.
func (w Write) String() string { return fmt.Sprintf("%s %s %q", w.cmd, w.key, w.args) }

// check reports what makes w impossible to send.
func (w Write) check() error {
	if err := checkEffectKey(w.key); err != nil {
		return err
	}
	n := len(w.args)
	switch w.cmd {
	case "HINCRBY":
		if v, err := strconv.ParseInt(w.args[1], 10, 64); err != nil || !exact(v) {
			return fmt.Errorf("increment %s beyond ±%d", w.args[1], int64(MaxExactInt))
		}
	case "HSET", "SET", "DEL":
	case "RPUSH":
		if n < 1 || n > MaxWriteValues {
			return fmt.Errorf("%d values, want 1..%d", n, MaxWriteValues)
		}
	case "XADD":
		if n < 2 || n%2 != 0 || n > 2*MaxWriteValues {
			return fmt.Errorf("%d arguments, want 1..%d field-value pairs", n, MaxWriteValues)
		}
	default:
		return fmt.Errorf("not a write: make it with HIncrBy, HSet, Set, RPush, XAdd or Del")
	}
	return nil
}
