package harness

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
)

// maxCrossDigits is the longest counter crossDigits moves. A run's counter starts at 16
// digits at most and is moved once; 19 nines would pass 2^63-1, which the acquire script
// refuses, so a counter is never moved that far whatever a schedule asks.
const maxCrossDigits = 17

// crossDigitsScript moves the token counter to the largest value of its number of digits
// (99…9), in one step, so that the next token has one digit more. It never moves the
// counter down, and leaves an absent counter, or one of more than ARGV[1] digits, alone.
// KEYS: counter. ARGV: the most digits moved. Reply: {counter before, counter after}.
var crossDigitsScript = redis.NewScript(`
local c = redis.call('GET', KEYS[1])
if not c or not string.match(c, '^%d+$') or #c > tonumber(ARGV[1]) then return {c or '', c or ''} end
local n = string.rep('9', #c)
if n ~= c then redis.call('SET', KEYS[1], n) end
return {c, n}
`)

// crossDigits moves the token counter of the election name, on the Redis at addr, to the
// largest value of its number of digits (nemesis.Step.CrossDigits): the next token
// issued has one digit more than every token before it. Tokens stay strictly
// increasing. It returns the counter before and after.
func crossDigits(ctx context.Context, addr, name string) (before, after string, err error) {
	c := election.NewClient(addr)
	defer c.Close()
	v, err := crossDigitsScript.Run(ctx, c, []string{election.TokenKey(name)}, maxCrossDigits).StringSlice()
	if err != nil {
		return "", "", fmt.Errorf("harness: move the token counter to a digit boundary: %w", err)
	}
	if len(v) != 2 {
		return "", "", fmt.Errorf("harness: move the token counter to a digit boundary: reply %q", v)
	}
	return v[0], v[1], nil
}
