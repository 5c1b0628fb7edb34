package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/strata-db/strata/revision"
)

// increments does n read-modify-write increments of /n in resource "counter" with expected_head, retrying on
// conflict, as an agent following the rules would.
func increments(ctx context.Context, db *DB, n int) error {
	for i := 0; i < n; i++ {
		for {
			v, st, err := db.Get(ctx, Ref{}, "counter", revision.MustPointer("/n"))
			if err != nil {
				return err
			}
			text, err := db.Forest().JSON(ctx, v)
			if err != nil {
				return err
			}
			x, _ := strconv.Atoi(string(text))
			patch, _ := revision.ParsePatch([]byte(fmt.Sprintf(`[{"op":"replace","path":"/n","value":%d}]`, x+1)))
			_, err = db.Patch(ctx, "counter", patch, WriteOptions{ExpectedHead: st.Rev.Number})
			if errors.Is(err, ErrConflict) {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
	return nil
}
