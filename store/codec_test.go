package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Every codec's stored form decodes to the node's bytes, and a damaged one is reported as corrupt, never returned.
func TestCodecsRoundTripAndDamage(t *testing.T) {
	data := []byte(strings.Repeat(`{"active":true,"email":"user@example.com","tags":["a","b"]}`, 60))
	h := HashOf(data)
	for _, c := range []Codec{CodecS2, CodecZstd} {
		t.Run(fmt.Sprint("codec ", c), func(t *testing.T) {
			s := encodeStored(data, c)
			if s[0] != byte(c) || len(s) > len(data)/4 {
				t.Fatalf("stored form: codec %d, %d bytes for %d; want codec %d and compressed", s[0], len(s), len(data), c)
			}
			got, err := decodeStored(h, s)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("decode: %v (equal: %v)", err, bytes.Equal(got, data))
			}
			for _, damaged := range [][]byte{s[:len(s)/2], flip(s, len(s)/2), flip(s, len(s)-1)} {
				if got, err := decodeStored(h, damaged); !errors.Is(err, ErrCorruptNode) {
					t.Errorf("damaged form decoded: %d bytes, %v; want ErrCorruptNode", len(got), err)
				}
			}
		})
	}
	// Incompressible bytes are stored raw, whatever the codec.
	var noise []byte
	for i := range 16 {
		h := HashOf([]byte{byte(i)})
		noise = append(noise, h[:]...)
	}
	for _, c := range []Codec{CodecS2, CodecZstd} {
		if s := encodeStored(noise, c); s[0] != codecRaw || !bytes.Equal(s[1:], noise) {
			t.Errorf("codec %d: incompressible bytes stored with codec %d", c, s[0])
		}
	}
	if _, err := decodeStored(h, append([]byte{9}, data...)); !errors.Is(err, ErrCorruptNode) ||
		!strings.Contains(err.Error(), "newer strata build") {
		t.Errorf("unknown codec: %v", err)
	}
}

// A zstd frame whose header claims more than maxNodeBytes (but less than the library's own 64 GiB bound) is refused
// for its size, before anything that size is allocated.
func TestZstdFrameClaimingHugeSizeIsRefused(t *testing.T) {
	// Magic, a frame header descriptor for a single segment with an 8-byte content size, the size (300 MiB), then
	// one last RLE block of 128 KiB of 'x'.
	frame := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	frame = append(frame, 0xE0)
	frame = binary.LittleEndian.AppendUint64(frame, 300<<20)
	hdr := uint32(1) | 1<<1 | (128<<10)<<3
	frame = append(frame, byte(hdr), byte(hdr>>8), byte(hdr>>16), 'x')
	_, err := decodeStored(Hash{}, append([]byte{codecZstd}, frame...))
	if !errors.Is(err, ErrCorruptNode) || !errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		t.Fatalf("decode of a frame claiming 300 MiB: %v; want ErrCorruptNode for its size", err)
	}
}

// An S2 block whose header claims gigabytes is refused before anything that size is allocated (s2.Decode allocates
// what the header claims), and one that claims more than maxNodeBytes but truly holds it still decodes.
func TestS2BlockClaimingHugeSizeIsRefused(t *testing.T) {
	stored := []byte{codecS2, 0xf0, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x01, 0x02} // claims 4 GiB less 16 bytes
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := decodeStored(Hash{}, stored)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptNode) {
		t.Fatalf("decode of a 9-byte block claiming 4 GiB: %v; want ErrCorruptNode", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("decode of a 9-byte block claiming 4 GiB allocated %d MiB", grew>>20)
	}

	defer func(n int) { maxNodeBytes = n }(maxNodeBytes)
	maxNodeBytes = 1 << 10
	for _, data := range [][]byte{[]byte(strings.Repeat("a", 1<<20)), []byte(strings.Repeat(`{"k":"value"},`, 5000))} {
		s := append([]byte{codecS2}, s2.EncodeBetter(nil, data)...)
		if got, err := decodeStored(HashOf(data), s); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("decode of a true %d-byte block over a %d-byte bound: %v", len(data), maxNodeBytes, err)
		}
	}
}

// s2Produces agrees with s2.Decode: on blocks of every encoder, it gives their length; on damaged ones, it says
// malformed exactly when s2.Decode fails, and otherwise gives the length s2.Decode returns.
func TestS2Produces(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gen := []func(n int) []byte{
		func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return b
		},
		func(n int) []byte { return []byte(strings.Repeat("x", n)) },
		func(n int) []byte {
			var b []byte
			for len(b) < n {
				b = fmt.Appendf(b, `{"id":%d,"name":"user%d","score":%d},`, len(b), r.IntN(50), r.IntN(100))
			}
			return b[:n]
		},
		func(n int) []byte { // runs of random length
			var b []byte
			for len(b) < n {
				b = append(b, bytes.Repeat([]byte{byte(r.IntN(4))}, 1+r.IntN(70000))...)
			}
			return b[:n]
		},
	}
	enc := []func([]byte) []byte{
		func(b []byte) []byte { return s2.Encode(nil, b) },
		func(b []byte) []byte { return s2.EncodeBetter(nil, b) },
		func(b []byte) []byte { return s2.EncodeBest(nil, b) },
		func(b []byte) []byte { return s2.EncodeSnappy(nil, b) },
	}
	agree := func(block []byte) {
		t.Helper()
		n, hdr := binary.Uvarint(block)
		if hdr <= 0 || n > 1<<32 {
			return
		}
		got, ok := s2Produces(block[hdr:], n)
		out, err := s2.Decode(nil, block)
		if (err == nil) != (ok && got == n) || (err == nil && uint64(len(out)) != got) {
			t.Fatalf("block of %d bytes claiming %d: s2Produces %d, %v; s2.Decode %d bytes, %v", len(block), n, got, ok, len(out), err)
		}
	}
	for i := 0; i < 400; i++ {
		data := gen[i%len(gen)](1 + r.IntN([]int{64, 4096, 200000}[i%3]))
		block := enc[(i/len(gen))%len(enc)](data)
		n, hdr := binary.Uvarint(block)
		if got, ok := s2Produces(block[hdr:], n); !ok || got != uint64(len(data)) {
			t.Fatalf("a block of %d bytes: s2Produces %d, %v", len(data), got, ok)
		}
		for j := 0; j < 20; j++ {
			damaged := bytes.Clone(block)
			for k := 0; k <= r.IntN(3); k++ {
				damaged[hdr+r.IntN(len(damaged)-hdr)] = byte(r.Uint32())
			}
			agree(damaged)
			agree(damaged[:hdr+r.IntN(len(damaged)-hdr+1)])
		}
	}
	for i := 0; i < 5000; i++ {
		junk := make([]byte, 1+r.IntN(40))
		for k := range junk {
			junk[k] = byte(r.Uint32())
		}
		agree(append(binary.AppendUvarint(nil, uint64(r.IntN(300))), junk...))
	}
}

// A node larger than maxNodeBytes is stored with S2 even where zstd is the codec: a zstd frame that large could
// never be read back under the decoder's bound.
func TestNodeOverZstdBoundIsStoredWithS2(t *testing.T) {
	defer func(n int) { maxNodeBytes = n }(maxNodeBytes)
	maxNodeBytes = 1 << 10
	data := []byte(strings.Repeat("a long object key ", 200))
	s := encodeStored(data, CodecZstd)
	if s[0] != codecS2 {
		t.Fatalf("a %d-byte node over a %d-byte bound was stored with codec %d, want S2", len(data), maxNodeBytes, s[0])
	}
	if got, err := decodeStored(HashOf(data), s); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("decode: %v", err)
	}
}

// Which stored forms a backend keeps as PrepareNodes made them: a backend writing S2 never stores zstd.
func TestStoredFormKeepsOnlyWhatTheBackendWrites(t *testing.T) {
	data := []byte(strings.Repeat("abcdefgh", 200))
	for _, made := range []Codec{CodecS2, CodecZstd} {
		for _, backend := range []Codec{CodecS2, CodecZstd} {
			ns := make([]Node, prepareParallel) // a bulk batch, which PrepareNodes makes in the codec it is given
			for i := range ns {
				d := fmt.Appendf(bytes.Clone(data), "%d", i)
				ns[i] = Node{Hash: HashOf(d), Data: d}
			}
			PrepareNodes(ns, made)
			got := storedForm(ns[0], backend)
			want := byte(backend)
			if made == CodecS2 {
				want = codecS2 // S2 is read by every build: kept as it is
			}
			if got[0] != want {
				t.Errorf("prepared %d, backend %d: stored with codec %d, want %d", made, backend, got[0], want)
			}
		}
	}
}

func flip(s []byte, i int) []byte {
	d := bytes.Clone(s)
	d[i] ^= 0x5a
	return d
}

// A node marked incompressible is stored raw whatever the codec, prepared ahead or not, even when its bytes would
// compress (so the codec was not tried), and reads back as it was.
func TestIncompressibleNodeIsStoredRaw(t *testing.T) {
	data := []byte(strings.Repeat("abcdefgh", 500))
	for _, c := range []Codec{CodecS2, CodecZstd} {
		if s := encodeStored(data, c); s[0] == codecRaw {
			t.Fatalf("codec %d stores the test's bytes raw: they must compress for the test to mean anything", c)
		}
		n := Node{Hash: HashOf(data), Data: data, Incompressible: true}
		ns := []Node{n}
		PrepareNodes(ns, c)
		for what, s := range map[string][]byte{"prepared": storedForm(ns[0], c), "not prepared": storedForm(n, c)} {
			if s[0] != codecRaw || !bytes.Equal(s[1:], data) {
				t.Errorf("codec %d, %s: stored with codec %d in %d bytes, want raw", c, what, s[0], len(s))
			}
			if got, err := decodeStored(n.Hash, s); err != nil || !bytes.Equal(got, data) {
				t.Errorf("codec %d, %s: decode: %v", c, what, err)
			}
		}
	}
}

// PrepareNodes compresses a batch of a commit's size (fewer than prepareParallel nodes) with S2 even for a zstd
// backend, which reads both, and a larger batch with the codec it is given; a backend that writes zstd keeps
// either as prepared.
func TestSmallBatchesArePreparedWithS2(t *testing.T) {
	batch := func(n int) []Node {
		ns := make([]Node, n)
		for i := range ns {
			d := []byte(strings.Repeat(fmt.Sprintf(`{"id":%d,"name":"user-%d"},`, i, i), 100))
			ns[i] = Node{Hash: HashOf(d), Data: d}
		}
		return ns
	}
	for _, c := range []struct {
		n          int
		give, want Codec
	}{{1, CodecZstd, CodecS2}, {prepareParallel - 1, CodecZstd, CodecS2}, {prepareParallel, CodecZstd, CodecZstd},
		{4 * prepareParallel, CodecZstd, CodecZstd}, {1, CodecS2, CodecS2}, {prepareParallel, CodecS2, CodecS2}} {
		ns := batch(c.n)
		PrepareNodes(ns, c.give)
		for i, n := range ns {
			s := storedForm(n, c.give)
			if s[0] != byte(c.want) {
				t.Fatalf("a batch of %d prepared for codec %d: node %d stored with codec %d, want %d", c.n, c.give, i,
					s[0], c.want)
			}
			if got, err := decodeStored(n.Hash, s); err != nil || !bytes.Equal(got, n.Data) {
				t.Fatalf("a batch of %d prepared for codec %d: node %d: %v", c.n, c.give, i, err)
			}
		}
	}
}
