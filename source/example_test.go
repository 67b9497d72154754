package source_test

import (
	"fmt"

	"github.com/fenceline/fenceline/source"
)

func ExampleAt() {
	e := source.At(1)
	fmt.Println(e.ID, e.Ledger, e.From, "->", e.To, e.Amount)
	// Output: 1 1 acct-01 -> acct-09 771
}

func ExampleBalances() {
	for i := int64(1); i <= 3; i++ {
		e := source.At(i)
		fmt.Println(e.From, "->", e.To, e.Amount)
	}
	fmt.Println(source.Balances(3))
	// Output:
	// acct-01 -> acct-09 771
	// acct-14 -> acct-13 984
	// acct-13 -> acct-04 354
	// map[acct-01:-771 acct-04:354 acct-09:771 acct-13:630 acct-14:-984]
}
