package workload

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestJSON: the document is docs/benchmarks.md's, element for element.
func TestJSON(t *testing.T) {
	var got []map[string]any
	if err := json.Unmarshal(JSON(250), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 250 {
		t.Fatalf("%d elements", len(got))
	}
	for i, e := range got {
		want := fmt.Sprintf(`{"id":%d,"name":"user-%d","email":"user%d@example.com","tags":["a","b"],"score":%d,"active":true}`, i, i, i, i%100)
		if b := AppendElement(nil, i, i%100); string(b) != want {
			t.Fatalf("element %d: %s, want %s", i, b, want)
		}
		if e["name"] != fmt.Sprintf("user-%d", i) || e["score"] != float64(i%100) {
			t.Fatalf("element %d decodes as %v", i, e)
		}
	}
}
