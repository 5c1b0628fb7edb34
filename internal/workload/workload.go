// Package workload makes docs/benchmarks.md's document: an array of n small objects
// {"id":i,"name":"user-i","email":"useri@example.com","tags":["a","b"],"score":i%100,"active":true}
// (n = 1,000,000 is 96 MB of JSON). The benchmark suite and the packages' benchmarks and tests share it.
package workload

import "strconv"

// AppendElement appends element i with the given score (the document's own is i%100) to b.
func AppendElement(b []byte, i, score int) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"name":"user-`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","email":"user`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `@example.com","tags":["a","b"],"score":`...)
	b = strconv.AppendInt(b, int64(score), 10)
	return append(b, `,"active":true}`...)
}

// JSON is the document of n elements, as compact JSON.
func JSON(n int) []byte {
	b := make([]byte, 0, n*100+2)
	b = append(b, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendElement(b, i, i%100)
	}
	return append(b, ']')
}
