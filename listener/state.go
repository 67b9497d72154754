package listener

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/history"
)

// ReadState reads the whole store of election name — cursor record, sink, balances and
// audit stream — in one MULTI/EXEC, so the parts are one consistent snapshot. It is the
// harness's final read. tokenKey is the election's token counter (election.TokenKey(name));
// its value goes into TokenCounter (0 if the key is missing). An empty tokenKey leaves
// TokenCounter 0 for the caller to fill. It blocks until Redis answers or ctx is done;
// the sink and the audit stream are read whole.
func ReadState(ctx context.Context, client redis.UniversalClient, name, tokenKey string) (*history.Store, error) {
	k := KeysFor(name)
	var (
		rec     *redis.SliceCmd
		bal     *redis.MapStringStringCmd
		sink    *redis.StringSliceCmd
		audit   *redis.XMessageSliceCmd
		counter *redis.StringCmd
	)
	_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.HMGet(ctx, k.Cursor, "cursor", "token")
		bal = p.HGetAll(ctx, k.Balances)
		sink = p.LRange(ctx, k.Sink, 0, -1)
		audit = p.XRange(ctx, k.Audit, "-", "+")
		if tokenKey != "" {
			counter = p.Get(ctx, tokenKey)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("listener: read state: %w", err)
	}
	st := &history.Store{Balances: map[string]int64{}, Sink: []int64{}, Audit: []history.AuditEntry{}}

	vals, err := rec.Result()
	if err != nil || len(vals) != 2 {
		return nil, fmt.Errorf("listener: read state: cursor record: %v %w", vals, err)
	}
	if st.Cursor, err = parseOptInt(vals[0]); err != nil {
		return nil, fmt.Errorf("listener: read state: cursor: %w", err)
	}
	if st.MaxToken, err = parseOptInt(vals[1]); err != nil {
		return nil, fmt.Errorf("listener: read state: token: %w", err)
	}
	if counter != nil {
		v, err := counter.Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, fmt.Errorf("listener: read state: %s: %w", tokenKey, err)
		default:
			if st.TokenCounter, err = parseOptInt(v); err != nil {
				return nil, fmt.Errorf("listener: read state: %s: %w", tokenKey, err)
			}
		}
	}
	balances, err := bal.Result()
	if err != nil {
		return nil, fmt.Errorf("listener: read state: balances: %w", err)
	}
	for acct, v := range balances {
		n, err := parseOptInt(v)
		if err != nil {
			return nil, fmt.Errorf("listener: read state: balance of %s: %w", acct, err)
		}
		st.Balances[acct] = n
	}
	ids, err := sink.Result()
	if err != nil {
		return nil, fmt.Errorf("listener: read state: sink: %w", err)
	}
	st.Sink = make([]int64, len(ids))
	for i, v := range ids {
		if st.Sink[i], err = parseOptInt(v); err != nil {
			return nil, fmt.Errorf("listener: read state: sink[%d]: %w", i, err)
		}
	}
	msgs, err := audit.Result()
	if err != nil {
		return nil, fmt.Errorf("listener: read state: audit: %w", err)
	}
	st.Audit = make([]history.AuditEntry, len(msgs))
	for i, m := range msgs {
		if st.Audit[i], err = parseAudit(m); err != nil {
			return nil, fmt.Errorf("listener: read state: audit %s: %w", m.ID, err)
		}
	}
	return st, nil
}

// parseAudit reads one audit stream entry.
func parseAudit(m redis.XMessage) (history.AuditEntry, error) {
	e := history.AuditEntry{StreamID: m.ID}
	str := func(f string) (string, error) {
		s, ok := m.Values[f].(string)
		if !ok {
			return "", fmt.Errorf("field %q missing or not a string", f)
		}
		return s, nil
	}
	var err error
	if e.Op, err = str("op"); err != nil {
		return e, err
	}
	if e.Node, err = str("node"); err != nil {
		return e, err
	}
	if e.Result, err = str("result"); err != nil {
		return e, err
	}
	num := func(f string) (int64, error) {
		s, err := str(f)
		if err != nil {
			return 0, err
		}
		n, err := parseOptInt(s)
		if err != nil && e.Result == ResultBadArgument && f != "time" {
			// A rejected malformed commit is audited with its arguments as sent; one that
			// is not an integer reads as 0 (the stream keeps the original).
			return 0, nil
		}
		return n, err
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"token", &e.Token}, {"from", &e.From}, {"to", &e.To}, {"time", &e.ServerTime}} {
		if *f.dst, err = num(f.name); err != nil {
			return e, err
		}
	}
	return e, nil
}
