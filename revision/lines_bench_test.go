package revision

import (
	"context"
	"io"
	"testing"
)

// BenchmarkStreamLines is BenchmarkStream as JSON Lines (WriteJSONLines: one element per line), MB/s of the JSON
// document's size.
func BenchmarkStreamLines(b *testing.B) {
	ctx := context.Background()
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		f, root := fx.WarmTree(b)
		b.SetBytes(int64(len(fx.Doc())))
		b.ReportAllocs()
		for b.Loop() {
			if err := f.WriteJSONLines(ctx, io.Discard, root); err != nil {
				b.Fatal(err)
			}
		}
	})
}
