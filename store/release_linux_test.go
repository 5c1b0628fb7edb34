package store_test

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/store"
)

// rssFile is this process's resident file-backed memory (RssFile in /proc/self/status), in bytes.
func rssFile(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestBoltReleaseMemory: the pages a read faulted into bbolt's map leave the resident set, and read back the same.
func TestBoltReleaseMemory(t *testing.T) {
	for name, open := range map[string]func(t *testing.T, path string) store.Backend{
		"Bolt": func(t *testing.T, p string) store.Backend { return openBolt(t, p, nil) },
		"Shared": func(t *testing.T, p string) store.Backend {
			s, err := store.OpenShared(p, &store.SharedOptions{Linger: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			be := open(t, filepath.Join(t.TempDir(), "db.strata"))
			// 32 MiB of incompressible nodes: they occupy as many pages.
			r := rand.New(rand.NewPCG(1, 2))
			nodes := make([]store.Node, 4096)
			hashes := make([]store.Hash, len(nodes))
			for i := range nodes {
				data := make([]byte, 8<<10)
				for k := range data {
					data[k] = byte(r.Uint32())
				}
				nodes[i] = store.Node{Hash: store.HashOf(data), Data: data}
				hashes[i] = nodes[i].Hash
			}
			putAll(t, be, nodes)
			if _, err := be.GetNodes(ctx, hashes); err != nil {
				t.Fatal(err)
			}
			before := rssFile(t)
			if err := be.(store.MemoryReleaser).ReleaseMemory(); err != nil {
				t.Fatal(err)
			}
			after := rssFile(t)
			t.Logf("RssFile %d MiB -> %d MiB", before>>20, after>>20)
			if before-after < 24<<20 {
				t.Errorf("RssFile %d -> %d bytes: the map's pages were not released", before, after)
			}
			got, err := be.GetNodes(ctx, hashes)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if !bytes.Equal(got[i], nodes[i].Data) {
					t.Fatalf("node %d reads differently after the release", i)
				}
			}
		})
	}
}
