package history

// auditLog is an audit stream held compactly, as Events holds a history: 56 bytes an
// entry and no pointer, where an AuditEntry takes 96 bytes and four strings that the
// garbage collector scans on every cycle (a long run's audit has a million entries).
// Stream and op ids live in an arena's chunks, nodes and results in a table.
type auditLog struct {
	rows []auditRow
	ids  []string // chunks of an arena
	strs []string // strs[0] is ""
}

type auditRow struct {
	token, from, to, serverTime int64
	sid, op                     span
	node, result, kind          uint32
}

func (l *auditLog) at(i int) AuditEntry {
	r := &l.rows[i]
	return AuditEntry{StreamID: str(l.ids, nil, r.sid), Op: str(l.ids, nil, r.op), Node: l.strs[r.node],
		Token: r.token, From: r.from, To: r.to, Result: l.strs[r.result], Kind: Kind(l.strs[r.kind]), ServerTime: r.serverTime}
}

// AuditLen returns the number of entries of the store's audit stream: those of Audit,
// then those LoadRun read from AuditFile, which it holds packed.
func (s *Store) AuditLen() int { return len(s.Audit) + len(s.packed.rows) }

// AuditAt returns the i-th entry of the audit stream (see AuditLen). Its strings share
// the store's memory; it allocates nothing.
func (s *Store) AuditAt(i int) AuditEntry {
	if i < len(s.Audit) {
		return s.Audit[i]
	}
	return s.packed.at(i - len(s.Audit))
}

// AuditOp returns the op id of the i-th entry of the audit stream.
func (s *Store) AuditOp(i int) string {
	if i < len(s.Audit) {
		return s.Audit[i].Op
	}
	return str(s.packed.ids, nil, s.packed.rows[i-len(s.Audit)].op)
}
