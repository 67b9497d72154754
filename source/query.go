package source

import (
	"fmt"
	"net/url"
	"strconv"
)

// queryError is a bad query parameter: a 400 naming the field.
type queryError struct {
	field, reason string
}

// Error names the field and says what is wrong with it.
func (e *queryError) Error() string {
	return fmt.Sprintf("source: invalid %s: %s", e.field, e.reason)
}

// parseQuery reads the cursor, limit and order parameters of GET /events.
// A missing or empty cursor is 0 (before the first event); a missing or empty limit is
// DefaultLimit; order may only be "asc" (or absent).
func parseQuery(q url.Values) (cursor int64, limit int, err error) {
	cursor = 0
	if c := q.Get("cursor"); c != "" {
		v, perr := strconv.ParseInt(c, 10, 64)
		if perr != nil || v < 0 {
			return 0, 0, &queryError{"cursor", "must be a non-negative integer paging token"}
		}
		cursor = v
	}
	limit = DefaultLimit
	if l := q.Get("limit"); l != "" {
		v, perr := strconv.Atoi(l)
		if perr != nil || v < 1 || v > MaxLimit {
			return 0, 0, &queryError{"limit", fmt.Sprintf("must be an integer from 1 to %d", MaxLimit)}
		}
		limit = v
	}
	if o := q.Get("order"); o != "" && o != "asc" {
		return 0, 0, &queryError{"order", `only "asc" is supported`}
	}
	return cursor, limit, nil
}
