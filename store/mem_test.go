package store_test

import (
	"testing"

	"github.com/strata-db/strata/store"
	"github.com/strata-db/strata/store/storetest"
)

func TestMemConformance(t *testing.T) {
	storetest.TestNodeStore(t, func(t *testing.T) store.NodeStore { return store.NewMem() })
}

func TestMemBackendConformance(t *testing.T) {
	storetest.TestNodeStore(t, func(t *testing.T) store.NodeStore { return store.NewMemBackend() })
}
