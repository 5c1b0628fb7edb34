package jsonscan

import (
	"bytes"
	"io"
	"strconv"
	"testing"
)

// genObjects returns a JSON array of small objects like
// {"id":1,"name":"user-1","email":"user1@example.com","tags":["a","b"],"score":1,"active":true}
// that is at least size bytes long.
func genObjects(size int) []byte {
	b := make([]byte, 0, size+256)
	b = append(b, '[')
	for i := 1; len(b) < size; i++ {
		if i > 1 {
			b = append(b, ',')
		}
		n := strconv.Itoa(i)
		b = append(b, `{"id":`...)
		b = append(b, n...)
		b = append(b, `,"name":"user-`...)
		b = append(b, n...)
		b = append(b, `","email":"user`...)
		b = append(b, n...)
		b = append(b, `@example.com","tags":["a","b"],"score":`...)
		b = strconv.AppendInt(b, int64(i%100), 10)
		b = append(b, `,"active":`...)
		b = strconv.AppendBool(b, i%3 != 0)
		b = append(b, '}')
	}
	return append(b, ']')
}

var benchDoc = genObjects(10 << 20)

// drain scans s to the end and returns the number of tokens.
func drain(b *testing.B, s *Scanner) int {
	n := 0
	for {
		_, _, err := s.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

func BenchmarkScanSmallObjects(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		drain(b, New(bytes.NewReader(benchDoc), 0))
	}
}

func BenchmarkScanBytes(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		drain(b, NewBytes(benchDoc, 0))
	}
}
