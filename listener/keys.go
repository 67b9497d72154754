package listener

// DefaultName is the election name used when StoreConfig.Name is empty. It must match the
// election's, whose keys share the hash tag.
const DefaultName = "fenceline"

// Keys are the Redis keys of a cursor store. They share the election's hash tag "{name}",
// so they live in one Redis Cluster slot with the lease and token counter and one Lua
// script may touch them all.
type Keys struct {
	// Cursor is a hash with fields "cursor" (id of the last applied event) and "token"
	// (the highest fencing token accepted). Missing fields read as 0.
	Cursor string
	// Balances is a hash account -> balance of the simulated ledger.
	Balances string
	// Sink is a list of applied event ids, in the order they were applied.
	Sink string
	// Audit is a stream with one entry per fenced write attempt, accepted or rejected:
	// fields op, node, token, from, to, result, time (Redis TIME, microseconds). It is
	// never trimmed.
	Audit string
}

// KeysFor returns the keys of election name (DefaultName if empty): "{name}:cursor",
// "{name}:balances", "{name}:sink", "{name}:audit".
func KeysFor(name string) Keys {
	if name == "" {
		name = DefaultName
	}
	p := "{" + name + "}:"
	return Keys{Cursor: p + "cursor", Balances: p + "balances", Sink: p + "sink", Audit: p + "audit"}
}

func (k Keys) list() []string { return []string{k.Cursor, k.Balances, k.Sink, k.Audit} }
