package store_test

import (
	"path/filepath"
	"testing"

	"github.com/strata-db/strata/store"
	"github.com/strata-db/strata/store/storetest"
)

func TestMemConformance(t *testing.T) {
	storetest.TestNodeStore(t, func(t *testing.T) store.NodeStore { return store.NewMem() })
}

func TestMemBackendConformance(t *testing.T) {
	storetest.TestBackend(t, func(t *testing.T) store.Backend { return store.NewMemBackend() })
}

func TestBoltBackendConformance(t *testing.T) {
	storetest.TestBackend(t, func(t *testing.T) store.Backend {
		b, err := store.OpenBolt(filepath.Join(t.TempDir(), "c.strata"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}

func TestSharedConformance(t *testing.T) {
	storetest.TestBackend(t, func(t *testing.T) store.Backend {
		s, err := store.OpenShared(filepath.Join(t.TempDir(), "shared.strata"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
