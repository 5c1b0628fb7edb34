package store

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Stored nodes begin with one codec byte, so the codec can change without rewriting old nodes: the hash covers the
// canonical bytes, never the stored ones. Every build reads every codec below; which one a backend writes is its
// Codec (Backend.NodeCodec), because a file or database that older builds share must not get nodes they cannot read.
const (
	codecRaw  byte = 0 // stored as is (when compression does not pay)
	codecS2   byte = 1 // S2 block (github.com/klauspost/compress/s2)
	codecZstd byte = 2 // zstd frame (github.com/klauspost/compress/zstd), fastest level, no checksum (the hash is one)
)

// Codec is the compression a backend writes new nodes with.
type Codec byte

const (
	// CodecS2 compresses nodes with S2. Format-1 and format-2 files and PostgreSQL databases write it: the builds
	// that made them read nothing else.
	CodecS2 = Codec(codecS2)
	// CodecZstd compresses nodes with zstd. Format-3 files write it. On the benchmark's 1,000,000-element document
	// its nodes take 0.086 bytes per byte of JSON against S2's 0.170 (the file 0.106 against 0.190), for 307 MB/s of
	// encoding against 849 and 1,220 MB/s of decoding against 1,930, on one core (docs/storage.md §4).
	CodecZstd = Codec(codecZstd)
)

// maxNodeBytes bounds what a stored zstd frame may claim to decode to, so that a damaged one cannot make a read
// allocate without limit. Nodes are cut at 16 KiB plus one entry, but an entry (one long object key, one long
// number) has no bound of its own: a node larger than this is stored with S2. S2's decoder allocates whatever its
// block's header claims (up to 4 GiB), so a block that claims more than this is first walked without output
// (s2Produces), and allocated for only if its operations produce exactly that.
var maxNodeBytes = 256 << 20 // a variable for tests only

var (
	// The fastest level: on the benchmark's nodes the default level compressed no better (0.0862) and 11% slower.
	// EncodeAll and DecodeAll are safe for concurrent use, one call per CPU at a time.
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(uint64(maxNodeBytes)))
		if err != nil {
			panic(err) // only for invalid options
		}
		return d
	})
)

// encodeStored returns the stored form of canonical node bytes in codec c.
func encodeStored(data []byte, c Codec) []byte {
	var out []byte
	if c == CodecZstd && len(data) <= maxNodeBytes {
		out = zstdEncoder().EncodeAll(data, make([]byte, 1, 1+len(data)/4))
		out[0] = codecZstd
	} else {
		out = make([]byte, 1+s2.MaxEncodedLen(len(data)))
		// EncodeBetter: on the benchmark's 1,000,000-element document its nodes take 0.170 bytes per byte of JSON
		// against 0.194 with s2.Encode, for 740 MB/s of encoding against 1,000 MB/s, and it decodes as fast
		// (s2.Decode reads both).
		out = out[:1+len(s2.EncodeBetter(out[1:], data))]
		out[0] = codecS2
	}
	if len(out)-1 >= len(data) {
		out = append(out[:1], data...)
		out[0] = codecRaw
	}
	return out
}

// writes reports whether a backend writing codec c may store a node in the stored form s as it is.
func (c Codec) writes(s []byte) bool { return len(s) > 0 && (s[0] != codecZstd || c == CodecZstd) }

// PrepareNodes checks that each node of ns that has no stored form yet hashes to its address, and makes its stored
// (compressed) form in codec c (the NodeCodec of the backend the nodes are for). A caller about to hand ns to
// PutNodes inside a write transaction calls it first, outside, so that the transaction, which holds the writer lock
// (and a shared file against other processes), does only B+tree work and the commit. It is optional: PutNodes checks
// and makes whatever is missing, and makes again a form its backend does not write. A node that does not hash to its
// address is left without, and PutNodes refuses it.
//
// Batches of prepareParallel nodes or more are shared among the CPUs: a 1,000,000-element load prepares 22,000
// nodes (87 MB), 163 ms of hashing and compressing with S2 on one core, and 350 ms with zstd (the write that builds
// them hands them over in batches while it builds: revision.Forest.WithPrepare).
//
// A batch smaller than that is a commit's few nodes, compressed one after another on the commit's path, and a zstd
// backend gets them in S2, which it reads as well: zstd's fastest level took 77–88 µs on a commit's 4 KiB leaf, its
// tables cold between commits, against 22–25 µs for S2, which made the leaf ~500 bytes larger (timed per call in
// 600 serial commits at N = 1,000,000; a commit's ~8 KiB of nodes are mostly child hashes, stored raw). Bulk
// writes keep zstd, which stores leaves in half S2's bytes.
func PrepareNodes(ns []Node, c Codec) {
	if len(ns) < prepareParallel && c == CodecZstd {
		c = CodecS2
	}
	if len(ns) < prepareParallel || runtime.GOMAXPROCS(0) == 1 {
		prepare(ns, c)
		return
	}
	workers := min(runtime.GOMAXPROCS(0), len(ns)/(prepareParallel/2))
	var wg sync.WaitGroup
	for w := range workers {
		part := ns[w*len(ns)/workers : (w+1)*len(ns)/workers]
		wg.Go(func() { prepare(part, c) })
	}
	wg.Wait()
}

const prepareParallel = 32

func prepare(ns []Node, c Codec) {
	for i := range ns {
		if ns[i].stored == nil && HashOf(ns[i].Data) == ns[i].Hash {
			ns[i].stored = encodeNode(ns[i], c)
		}
	}
}

// encodeNode is encodeStored, unless the node is known not to compress: then it is stored raw without trying.
func encodeNode(n Node, c Codec) []byte {
	if n.Incompressible {
		return append(append(make([]byte, 0, 1+len(n.Data)), codecRaw), n.Data...)
	}
	return encodeStored(n.Data, c)
}

// storedForm is a node's stored form in a backend that writes codec c: the one PrepareNodes made ahead of time if c
// may store it, or a fresh one.
func storedForm(n Node, c Codec) []byte {
	if c.writes(n.stored) {
		return n.stored
	}
	return encodeNode(n, c)
}

// decodeStored returns the canonical bytes of a stored node and checks them against the node's address.
func decodeStored(h Hash, stored []byte) ([]byte, error) {
	if len(stored) == 0 {
		return nil, fmt.Errorf("%w: node %s is empty", ErrCorruptNode, h.Short())
	}
	var (
		data []byte
		err  error
	)
	switch stored[0] {
	case codecRaw:
		data = append([]byte(nil), stored[1:]...)
	case codecS2:
		data, err = decodeS2(stored[1:])
	case codecZstd:
		data, err = zstdDecoder().DecodeAll(stored[1:], nil)
	default:
		return nil, fmt.Errorf("%w: node %s has unknown codec %d: it was written by a newer strata build, or it is "+
			"damaged", ErrCorruptNode, h.Short(), stored[0])
	}
	if err != nil {
		return nil, fmt.Errorf("%w: node %s: %w", ErrCorruptNode, h.Short(), err)
	}
	if HashOf(data) != h {
		return nil, fmt.Errorf("%w: node %s does not match its hash", ErrCorruptNode, h.Short())
	}
	return data, nil
}

// decodeS2 is s2.Decode, except that a block whose header claims more than maxNodeBytes is refused without
// allocating unless its operations produce exactly that many bytes: one damaged length byte must not make a read
// allocate gigabytes (a failed allocation ends the process).
func decodeS2(src []byte) ([]byte, error) {
	n, hdr := binary.Uvarint(src)
	if hdr <= 0 {
		return nil, s2.ErrCorrupt
	}
	if n > uint64(maxNodeBytes) {
		if got, ok := s2Produces(src[hdr:], n); !ok || got != n {
			return nil, fmt.Errorf("%w: its header claims %d bytes, which its operations do not produce", s2.ErrCorrupt, n)
		}
	}
	return s2.Decode(nil, src)
}

// s2Produces walks the operations of an S2 block (after its length header) as s2.Decode does, checking what it
// checks, without producing anything: it returns how many bytes they produce, and false if they are malformed or
// produce more than limit. It follows the bounds-checked loop of s2Decode in github.com/klauspost/compress/s2
// (decode_other.go, v1.20.4; BSD-3-Clause): literals (tag 0), copies with a 1-byte offset or, at offset 0, a repeat
// of the last offset with its length extended (tag 1), and copies with 2- and 4-byte offsets (tags 2 and 3).
// TestS2Produces holds it to s2.Decode's answers.
func s2Produces(src []byte, limit uint64) (uint64, bool) {
	var d uint64
	offset, s := uint64(0), 0
	need := func(k int) bool { // the next k bytes are there; s moves past them
		if k > len(src)-s {
			return false
		}
		s += k
		return true
	}
	for s < len(src) {
		tag := src[s]
		var length uint64
		switch tag & 0x03 {
		case 0: // literal
			x := uint64(tag >> 2)
			switch {
			case x < 60:
				s++
			case x <= 63:
				k := int(x - 59) // 1 to 4 bytes of length follow
				if !need(1 + k) {
					return 0, false
				}
				x = 0
				for i := k; i >= 1; i-- {
					x = x<<8 | uint64(src[s-k-1+i])
				}
			}
			length = x + 1
			if length > limit-d || length > uint64(len(src)-s) {
				return 0, false
			}
			d += length
			s += int(length)
			continue
		case 1: // copy, 1-byte offset; or a repeat
			if !need(2) {
				return 0, false
			}
			length = uint64(src[s-2]) >> 2 & 0x7
			if o := uint64(src[s-2])&0xe0<<3 | uint64(src[s-1]); o != 0 {
				offset = o
			} else {
				switch length {
				case 5:
					if !need(1) {
						return 0, false
					}
					length = uint64(src[s-1]) + 4
				case 6:
					if !need(2) {
						return 0, false
					}
					length = (uint64(src[s-2]) | uint64(src[s-1])<<8) + 1<<8
				case 7:
					if !need(3) {
						return 0, false
					}
					length = (uint64(src[s-3]) | uint64(src[s-2])<<8 | uint64(src[s-1])<<16) + 1<<16
				}
			}
			length += 4
		case 2: // copy, 2-byte offset
			if !need(3) {
				return 0, false
			}
			length = 1 + uint64(src[s-3])>>2
			offset = uint64(src[s-2]) | uint64(src[s-1])<<8
		case 3: // copy, 4-byte offset
			if !need(5) {
				return 0, false
			}
			length = 1 + uint64(src[s-5])>>2
			offset = uint64(src[s-4]) | uint64(src[s-3])<<8 | uint64(src[s-2])<<16 | uint64(src[s-1])<<24
		}
		if offset == 0 || d < offset || length > limit-d {
			return 0, false
		}
		d += length
	}
	return d, true
}
