package store

import (
	"context"
	"sync"
)

// Mem is an in-memory NodeStore, for tests and for scratch work. It stores nodes compressed, exactly as a disk
// store would, so that byte counts measured against it are the real ones.
type Mem struct {
	mu    sync.RWMutex
	nodes map[Hash][]byte
	bytes int64
}

// NewMem returns an empty in-memory node store.
// memCodec is what Mem and MemBackend compress nodes with: S2, the faster of the two (memory is not kept).
const memCodec = CodecS2

func NewMem() *Mem { return &Mem{nodes: make(map[Hash][]byte)} }

// GetNodes implements NodeReader.
func (m *Mem) GetNodes(ctx context.Context, hashes []Hash) ([][]byte, error) {
	out := make([][]byte, len(hashes))
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, h := range hashes {
		stored, ok := m.nodes[h]
		if !ok {
			return nil, &MissingError{Hash: h}
		}
		data, err := decodeStored(h, stored)
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

// PutNodes implements NodeWriter.
func (m *Mem) PutNodes(ctx context.Context, nodes []Node) (PutStats, error) {
	var st PutStats
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range nodes {
		if _, ok := m.nodes[n.Hash]; ok {
			continue
		}
		stored := storedForm(n, memCodec)
		m.nodes[n.Hash] = stored
		m.bytes += int64(len(stored))
		st.Nodes++
		st.RawBytes += int64(len(n.Data))
		st.StoredBytes += int64(len(stored))
	}
	return st, nil
}

func (m *Mem) has(h Hash) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.nodes[h]
	return ok
}

func (m *Mem) delete(hs []Hash) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range hs {
		if v, ok := m.nodes[h]; ok {
			m.bytes -= int64(len(v))
			delete(m.nodes, h)
		}
	}
}

// Len returns the number of nodes held.
func (m *Mem) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.nodes)
}

// Bytes returns the stored size of all nodes held.
func (m *Mem) Bytes() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.bytes
}

// Corrupt overwrites a stored node's bytes; tests use it to check that damage is detected.
func (m *Mem) Corrupt(h Hash, stored []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[h] = stored
}

// Hashes returns the addresses of every node held, in no particular order.
func (m *Mem) Hashes() []Hash {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Hash, 0, len(m.nodes))
	for h := range m.nodes {
		out = append(out, h)
	}
	return out
}

var _ NodeStore = (*Mem)(nil)
