//go:build windows

package snapshots

import "os"

// writable reports whether this process may create files in the directory dir. Windows has no access(2) that
// answers for ACLs, so a probe file is made and removed.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".strata-ready-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
