package pgstore_test

import (
	"testing"

	"github.com/fenceline/fenceline/internal/pgserver"
)

// pgURL is the PostgreSQL the tests and examples use: a server started for this test
// binary.
var pgURL string

func TestMain(m *testing.M) { pgserver.Main(m, &pgURL) }
