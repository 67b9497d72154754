package source

import (
	"fmt"
	"strconv"
)

// Limits of GET /events.
const (
	// DefaultLimit is the page size when the request gives no limit.
	DefaultLimit = 10
	// MaxLimit is the largest page a request may ask for.
	MaxLimit = 1000
)

// RecordType is the type of every record the source serves.
const RecordType = "payment"

// Page is the JSON body of a GET /events response, in Horizon's HAL shape:
//
//	{"_embedded":{"records":[...]},"_links":{"self":{"href":...},"next":{"href":...}}}
type Page struct {
	Embedded Embedded `json:"_embedded"` // the records
	Links    Links    `json:"_links"`    // self and next
}

// Embedded holds a page's records.
type Embedded struct {
	Records []Record `json:"records"` // in increasing id order
}

// Links are a page's HAL links. Next asks for the page after this one (with the same
// cursor when this page is empty).
type Links struct {
	Self Link `json:"self"` // this page
	Next Link `json:"next"` // the page after it
}

// Link is one HAL link.
type Link struct {
	Href string `json:"href"` // absolute URL
}

// Record is one event as served: numbers that Horizon sends as strings are strings here too.
type Record struct {
	ID          string `json:"id"`           // Event.ID, decimal
	PagingToken string `json:"paging_token"` // the cursor that resumes after it: equal to ID
	Type        string `json:"type"`         // always RecordType
	Ledger      int64  `json:"ledger"`       // Event.Ledger
	From        string `json:"from"`         // paying account
	To          string `json:"to"`           // paid account
	Amount      string `json:"amount"`       // Event.Amount, decimal
}

// NewRecord returns the wire form of e.
func NewRecord(e Event) Record {
	id := strconv.FormatInt(e.ID, 10)
	return Record{
		ID:          id,
		PagingToken: id,
		Type:        RecordType,
		Ledger:      e.Ledger,
		From:        e.From,
		To:          e.To,
		Amount:      strconv.FormatInt(e.Amount, 10),
	}
}

// Event parses a record back into an Event. It checks the record's form (type, numbers,
// id == paging token, distinct accounts), not that it matches At.
func (r Record) Event() (Event, error) {
	if r.Type != RecordType {
		return Event{}, fmt.Errorf("source: record %q: type %q, want %q", r.ID, r.Type, RecordType)
	}
	id, err := strconv.ParseInt(r.ID, 10, 64)
	if err != nil || id < 1 {
		return Event{}, fmt.Errorf("source: record id %q is not a positive integer", r.ID)
	}
	if r.PagingToken != r.ID {
		return Event{}, fmt.Errorf("source: record %d: paging token %q differs from id", id, r.PagingToken)
	}
	amount, err := strconv.ParseInt(r.Amount, 10, 64)
	if err != nil || amount < 1 {
		return Event{}, fmt.Errorf("source: record %d: amount %q is not a positive integer", id, r.Amount)
	}
	if r.From == "" || r.To == "" || r.From == r.To {
		return Event{}, fmt.Errorf("source: record %d: bad accounts %q -> %q", id, r.From, r.To)
	}
	return Event{ID: id, Ledger: r.Ledger, From: r.From, To: r.To, Amount: amount}, nil
}

// Problem is the JSON body of an error response (RFC 7807, as Horizon sends it).
type Problem struct {
	Type   string         `json:"type"`             // URI naming the kind of problem
	Title  string         `json:"title"`            // short, constant summary
	Status int            `json:"status"`           // the HTTP status
	Detail string         `json:"detail"`           // what went wrong
	Extras *ProblemExtras `json:"extras,omitempty"` // the offending parameter, if any
}

// ProblemExtras names the query parameter a bad request got wrong.
type ProblemExtras struct {
	InvalidField string `json:"invalid_field"` // query parameter name
	Reason       string `json:"reason"`        // what a valid value looks like
}
