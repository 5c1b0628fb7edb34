package bench

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	gendoc "github.com/strata-db/strata/internal/workload"
)

// doc is the document of docs/benchmarks.md: an array of n small objects.
type doc struct {
	n     int
	elems [][]byte // each element's compact JSON
	json  []byte   // the whole array, compact
	file  string   // a file holding json (after writeFile)
}

// element returns element i's JSON with the given score.
func element(i, score int) []byte { return gendoc.AppendElement(nil, i, score) }

func newDoc(n int) *doc {
	d := &doc{n: n, elems: make([][]byte, n)}
	var b bytes.Buffer
	b.Grow(n * 100)
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		d.elems[i] = element(i, i%100)
		b.Write(d.elems[i])
	}
	b.WriteByte(']')
	d.json = b.Bytes()
	return d
}

func (d *doc) writeFile(dir string) (string, error) {
	f, err := os.CreateTemp(dir, fmt.Sprintf("doc-%d-*.json", d.n))
	if err != nil {
		return "", err
	}
	if _, err := f.Write(d.json); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return "", err
	}
	d.file = f.Name()
	return d.file, f.Close()
}

// joinElems writes elems as a JSON array: compact, or with one element per line (for git).
func joinElems(elems [][]byte, lines bool) []byte {
	size := 2
	for _, e := range elems {
		size += len(e) + 2
	}
	b := make([]byte, 0, size+4)
	b = append(b, '[')
	if lines {
		b = append(b, '\n')
	}
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
			if lines {
				b = append(b, '\n')
			}
		}
		b = append(b, e...)
	}
	if lines {
		b = append(b, '\n')
	}
	b = append(b, ']')
	if lines {
		b = append(b, '\n')
	}
	return b
}

// elementOf parses a whole array and returns element i, as an application holding the document as one value must.
func elementOf(data []byte, i int) ([]byte, error) {
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err != nil {
		return nil, err
	}
	if i >= len(arr) {
		return nil, fmt.Errorf("element %d: %w", i, errNotFound)
	}
	return arr[i], nil
}

// diffElems counts the elements that differ between two arrays, parsing both.
func diffElems(a, b []byte) (int, error) {
	var x, y []json.RawMessage
	if err := json.Unmarshal(a, &x); err != nil {
		return 0, err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return 0, err
	}
	n := max(len(x), len(y)) - min(len(x), len(y))
	for i := range min(len(x), len(y)) {
		if !bytes.Equal(x[i], y[i]) {
			n++
		}
	}
	return n, nil
}

type change struct{ i, score int }

// workload is one run's document and its K changes, with the answers every system must give.
type workload struct {
	n, k    int
	doc     *doc
	changes []change // changes[k-1] makes revision k
}

func newWorkload(n, k, run int) *workload {
	r := rand.New(rand.NewPCG(uint64(n), uint64(run)+1))
	w := &workload{n: n, k: k, doc: newDoc(n)}
	for j := 1; j <= k; j++ {
		w.changes = append(w.changes, change{i: r.IntN(n), score: 1000 + j})
	}
	return w
}

// scoreAt returns element i's score at revision k.
func (w *workload) scoreAt(k, i int) int {
	s := i % 100
	for j := 0; j < k; j++ {
		if w.changes[j].i == i {
			s = w.changes[j].score
		}
	}
	return s
}

// checkElement checks element i at revision k as a system returned it.
func (w *workload) checkElement(got []byte, k, i int) error {
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		return fmt.Errorf("element %d at revision %d: %w: %.100q", i, k, err, got)
	}
	_ = json.Unmarshal(element(i, w.scoreAt(k, i)), &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		return fmt.Errorf("element %d at revision %d is %s, want %s", i, k, ja, jb)
	}
	return nil
}

// changedBetween is how many elements differ between revisions a and b.
func (w *workload) changedBetween(a, b int) int {
	seen := map[int]bool{}
	for j := a; j < b; j++ {
		seen[w.changes[j].i] = true
	}
	n := 0
	for i := range seen {
		if w.scoreAt(a, i) != w.scoreAt(b, i) {
			n++
		}
	}
	return n
}

// over90 is the answer of the jq query at revision k.
func (w *workload) over90(k int) int {
	n := 0
	for i := 0; i < w.n; i++ {
		if i%100 > 90 {
			n++
		}
	}
	seen := map[int]bool{}
	for j := 0; j < k; j++ {
		i := w.changes[j].i
		if !seen[i] {
			seen[i] = true
			if i%100 <= 90 {
				n++ // every changed score is over 1000
			}
		}
	}
	return n
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

// dirSize adds up the sizes of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

func itoa(i int) string { return strconv.Itoa(i) }

// boltUsedBytes reads a bbolt file's high-water mark (pages in use or free for reuse, without the space bbolt
// preallocates) from its newer meta page. It reads the file directly, so the database may stay open.
func boltUsedBytes(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// A meta page: a 16-byte page header, then magic, version, page size, flags (uint32 each), the root bucket
	// (16 bytes), the freelist page, the high-water page id, the txid (uint64 each).
	var best, txid uint64
	var pageSize uint32
	hdr := make([]byte, 80)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return 0, err
	}
	pageSize = binary.LittleEndian.Uint32(hdr[24:])
	if binary.LittleEndian.Uint32(hdr[16:]) != 0xED0CDAED || pageSize < 512 {
		return 0, fmt.Errorf("%s: not a bbolt file", path)
	}
	for _, off := range []int64{0, int64(pageSize)} {
		if _, err := f.ReadAt(hdr, off); err != nil {
			return 0, err
		}
		if t := binary.LittleEndian.Uint64(hdr[64:]); t >= txid {
			txid, best = t, binary.LittleEndian.Uint64(hdr[56:])
		}
	}
	return int64(best) * int64(pageSize), nil
}
