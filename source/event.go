package source

import "fmt"

// Shape of the simulated ledger.
const (
	// NumAccounts is the number of accounts payments move between.
	NumAccounts = 16
	// EventsPerLedger is how many events each ledger closes with; event i belongs to
	// ledger (i-1)/EventsPerLedger + 1.
	EventsPerLedger = 10
	// MaxAmount bounds a payment's amount: 1 <= Amount <= MaxAmount.
	MaxAmount = 1000
)

// accounts holds the account names; it is never written after initialisation.
var accounts = func() [NumAccounts]string {
	var a [NumAccounts]string
	for i := range a {
		a[i] = fmt.Sprintf("acct-%02d", i)
	}
	return a
}()

// Event is one payment of the simulated ledger.
type Event struct {
	// ID is the event's position in the feed and its paging token: event i has ID i.
	ID int64
	// Ledger is the ledger sequence the payment closed in.
	Ledger int64
	// From and To are the paying and the paid account (never equal).
	From, To string
	// Amount is what moves from From to To, 1..MaxAmount.
	Amount int64
}

// Position is the event's place in the feed, its ID: the cursor after it is applied.
func (e Event) Position() int64 { return e.ID }

// Accounts returns the names of the ledger's accounts, "acct-00" .. "acct-15".
func Accounts() []string {
	out := make([]string, NumAccounts)
	copy(out, accounts[:])
	return out
}

// splitmix64 is the finaliser of Steele, Lea and Flood's SplitMix64: a fixed bijection of
// uint64 with good avalanche, so neighbouring ids give unrelated payments.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// payment returns the account indices and amount of event i.
func payment(i int64) (from, to int, amount int64) {
	h := splitmix64(uint64(i))
	from = int(h % NumAccounts)
	to = (from + 1 + int((h>>8)%(NumAccounts-1))) % NumAccounts
	amount = 1 + int64((h>>16)%MaxAmount)
	return from, to, amount
}

// At returns event i. It is pure: the same i gives the same event on every run.
// It panics if i < 1 (there is no event 0; a cursor of 0 means "before the first event").
func At(i int64) Event {
	if i < 1 {
		panic(fmt.Sprintf("source: At(%d): events start at 1", i))
	}
	from, to, amount := payment(i)
	return Event{
		ID:     i,
		Ledger: (i-1)/EventsPerLedger + 1,
		From:   accounts[from],
		To:     accounts[to],
		Amount: amount,
	}
}

// Range returns events from+1 .. to (empty if to <= from).
func Range(from, to int64) []Event {
	if to <= from {
		return nil
	}
	out := make([]Event, 0, to-from)
	for i := from + 1; i <= to; i++ {
		out = append(out, At(i))
	}
	return out
}

// Balances returns the ledger's balances after applying events 1..upTo in order, every
// account starting at 0. It has an entry for exactly the accounts that took part in at
// least one of those events (an entry may be 0); it is empty for upTo < 1.
//
// It is the checker's oracle: a store that applied exactly events 1..upTo, each once,
// holds these balances.
func Balances(upTo int64) map[string]int64 { return BalancesBetween(0, upTo) }

// BalancesBetween is Balances of a store that started at cursor from: the balances after
// applying events from+1..upTo in order, every account starting at 0. Its cost is
// O(upTo-from), whatever from is.
func BalancesBetween(from, upTo int64) map[string]int64 {
	var bal [NumAccounts]int64
	var seen [NumAccounts]bool
	for i := max(from, 0) + 1; i <= upTo && i > 0; i++ {
		from, to, amount := payment(i)
		bal[from] -= amount
		bal[to] += amount
		seen[from], seen[to] = true, true
	}
	out := make(map[string]int64, NumAccounts)
	for k := range bal {
		if seen[k] {
			out[accounts[k]] = bal[k]
		}
	}
	return out
}
