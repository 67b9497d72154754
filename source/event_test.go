package source

import (
	"maps"
	"testing"
)

// TestAtGolden pins the feed: a change here changes every stored history's meaning.
func TestAtGolden(t *testing.T) {
	golden := []Event{
		{ID: 1, Ledger: 1, From: "acct-01", To: "acct-09", Amount: 771},
		{ID: 2, Ledger: 1, From: "acct-14", To: "acct-13", Amount: 984},
		{ID: 3, Ledger: 1, From: "acct-13", To: "acct-04", Amount: 354},
		{ID: 10, Ledger: 1, From: "acct-10", To: "acct-04", Amount: 313},
		{ID: 11, Ledger: 2, From: "acct-13", To: "acct-09", Amount: 289},
		{ID: 1000, Ledger: 100, From: "acct-08", To: "acct-13", Amount: 37},
		{ID: 1 << 40, Ledger: 109951162778, From: "acct-09", To: "acct-14", Amount: 545},
	}
	for _, want := range golden {
		if got := At(want.ID); got != want {
			t.Errorf("At(%d) = %+v, want %+v", want.ID, got, want)
		}
	}
}

func TestAtProperties(t *testing.T) {
	valid := map[string]bool{}
	for _, a := range Accounts() {
		valid[a] = true
	}
	if len(valid) != NumAccounts {
		t.Fatalf("Accounts() has %d distinct names, want %d", len(valid), NumAccounts)
	}
	used := map[string]bool{}
	for i := int64(1); i <= 100_000; i++ {
		e := At(i)
		if e != At(i) {
			t.Fatalf("At(%d) is not deterministic", i)
		}
		if e.ID != i || e.Ledger != (i-1)/EventsPerLedger+1 {
			t.Fatalf("At(%d) = %+v: wrong id or ledger", i, e)
		}
		if !valid[e.From] || !valid[e.To] || e.From == e.To {
			t.Fatalf("At(%d) = %+v: bad accounts", i, e)
		}
		if e.Amount < 1 || e.Amount > MaxAmount {
			t.Fatalf("At(%d) = %+v: amount out of range", i, e)
		}
		used[e.From], used[e.To] = true, true
	}
	if len(used) != NumAccounts {
		t.Errorf("only %d of %d accounts used", len(used), NumAccounts)
	}
}

func TestAtPanicsBeforeFirstEvent(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("At(0) did not panic")
		}
	}()
	At(0)
}

func TestRange(t *testing.T) {
	if r := Range(5, 5); len(r) != 0 {
		t.Errorf("Range(5,5) = %v, want empty", r)
	}
	r := Range(5, 9)
	if len(r) != 4 {
		t.Fatalf("Range(5,9) has %d events, want 4", len(r))
	}
	for k, e := range r {
		if e != At(int64(6+k)) {
			t.Errorf("Range(5,9)[%d] = %+v, want At(%d)", k, e, 6+k)
		}
	}
}

// TestBalancesAgreesWithApplying applies events one at a time, the obvious way, and
// compares with Balances at every step for a while and at checkpoints after.
func TestBalancesAgreesWithApplying(t *testing.T) {
	if got := Balances(0); len(got) != 0 {
		t.Errorf("Balances(0) = %v, want empty", got)
	}
	bal := map[string]int64{}
	for i := int64(1); i <= 20_000; i++ {
		e := At(i)
		bal[e.From] -= e.Amount
		bal[e.To] += e.Amount
		if i <= 200 || i%997 == 0 || i == 20_000 {
			got := Balances(i)
			if !maps.Equal(got, bal) {
				t.Fatalf("Balances(%d) = %v, want %v", i, got, bal)
			}
			var sum int64
			for _, v := range got {
				sum += v
			}
			if sum != 0 {
				t.Fatalf("Balances(%d) sums to %d, want 0 (money is only moved)", i, sum)
			}
		}
	}
}

func BenchmarkBalances1M(b *testing.B) {
	for b.Loop() {
		Balances(1_000_000)
	}
}

func BenchmarkAt(b *testing.B) {
	var i int64
	for b.Loop() {
		i++
		At(i)
	}
}
