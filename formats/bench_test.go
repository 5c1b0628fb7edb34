package formats

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// csvWorkload is docs/benchmarks.md's workload as CSV (tags left out: CSV has no arrays), n records.
func csvWorkload(n int) []byte {
	b := []byte("active,email,id,name,score\n")
	for i := range n {
		b = append(b, "true,user"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, "@example.com,"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ",user-"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(i%100), 10)
		b = append(b, '\n')
	}
	return b
}

var benchTypes = map[string]ColumnType{"active": Boolean, "id": Number, "score": Number}

// BenchmarkCSVReader: CSV to JSON Lines alone, MB/s of CSV.
func BenchmarkCSVReader(b *testing.B) {
	in := csvWorkload(200_000)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := io.Copy(io.Discard, NewCSVReader(bytes.NewReader(in), benchTypes)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCSVImport: CSV through the streaming importer into an in-memory store, MB/s of CSV.
func BenchmarkCSVImport(b *testing.B) {
	in := csvWorkload(200_000)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		f := revision.New(store.NewMem(), nil)
		if _, _, err := f.ImportWith(context.Background(), NewCSVReader(bytes.NewReader(in), benchTypes), &revision.ImportOptions{Lines: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteCSV: an array of 200,000 flat objects out as CSV, MB/s of CSV.
func BenchmarkWriteCSV(b *testing.B) {
	in := csvWorkload(200_000)
	f := revision.New(store.NewMem(), nil)
	v, _, err := f.ImportWith(context.Background(), NewCSVReader(bytes.NewReader(in), benchTypes), &revision.ImportOptions{Lines: true})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := WriteCSV(context.Background(), f, io.Discard, v); err != nil {
			b.Fatal(err)
		}
	}
}
