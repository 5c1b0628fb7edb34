package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Which failed commits may have been made: a lost connection, a server shutting down, and a COMMIT answered with
// FATAL or PANIC (the session ended or the server crashed with it, maybe after writing the commit record); not an
// error PostgreSQL reported for a statement, or for COMMIT itself at severity ERROR.
func TestAmbiguousCommit(t *testing.T) {
	pg := func(code, severity string) error {
		return fmt.Errorf("committing: %w", &pgconn.PgError{Code: code, Severity: severity})
	}
	for _, c := range []struct {
		err      error
		atCommit bool
		want     bool
	}{
		{errors.New("read tcp: connection reset by peer"), true, true},
		{errors.New("read tcp: connection reset by peer"), false, true},
		{pg("08006", "FATAL"), false, true},
		{pg("57P01", "FATAL"), true, true},
		{pg("58030", "PANIC"), true, true}, // an fsync failed after the commit record was written
		{pg("XX000", "FATAL"), true, true},
		{pg("58030", "PANIC"), false, false}, // a statement before COMMIT: COMMIT never ran
		{pg("23505", "ERROR"), false, false},
		{pg("40001", "ERROR"), true, false}, // a serialization failure at COMMIT rolls back
		{pg("23503", "ERROR"), true, false}, // a deferred constraint
	} {
		if got := ambiguous(c.err, c.atCommit); got != c.want {
			t.Errorf("ambiguous(%v, at COMMIT %v) = %v, want %v", c.err, c.atCommit, got, c.want)
		}
	}
}
