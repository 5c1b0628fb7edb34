package review

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// TestQueueCountsPastKeptPaths: a plan keeps the first 100 paths it removes; the queue and the plan's page must
// tell the reviewer it removes 150 values, not 100.
func TestQueueCountsPastKeptPaths(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	db, err := e.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for i := 0; i < 150; i++ {
		m[fmt.Sprintf("k%03d", i)] = i
	}
	b, _ := json.Marshal(m)
	if _, err := db.Put(ctx, "big", b, snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := e.gate.As(e.settings.For("bob"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	out, err := v.Write(ctx, gate.Change{Op: gate.OpPut, Resource: "big", Value: json.RawMessage(`{}`), Tool: "put"})
	if err != nil || out.Plan == nil {
		t.Fatalf("%+v %v, want a plan", out, err)
	}
	id := out.Plan.Plan.ID
	br := e.browser()
	br.signIn(ritaToken)
	q := br.get("/ui/plans")
	if strings.Contains(q.body, "<td>100: ") || !strings.Contains(q.body, "<td>150: ") {
		i := strings.Index(q.body, id)
		t.Errorf("the queue does not say the plan removes 150 values: …%s…", q.body[max(0, i-50):min(len(q.body), i+900)])
	}
	p := br.get("/ui/plans/shop/" + id)
	if !strings.Contains(p.body, "and 50 more") {
		t.Errorf("the plan's page lists 100 removed paths and says nothing of the 50 more")
	}
}
