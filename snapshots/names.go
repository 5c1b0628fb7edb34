package snapshots

import (
	"regexp"
	"strings"

	"github.com/strata-db/strata/internal/suggest"
)

var (
	databaseName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	resourceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	refName      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)
	allDigits    = regexp.MustCompile(`^[0-9]+$`)
)

// ValidDatabaseName checks a database name: lower-case letters, digits, '_' and '-', starting with a letter or digit,
// at most 64 characters.
func ValidDatabaseName(name string) error {
	if !databaseName.MatchString(name) {
		return invalid("database name %q is not valid: use 1 to 64 lower-case letters, digits, '_' or '-', starting with a letter or digit (for example \"catalog\")", clip(name))
	}
	return nil
}

// ValidResourceName checks a resource name: letters, digits, '.', '_' and '-', starting with a letter or digit, at
// most 128 characters.
func ValidResourceName(name string) error {
	if !resourceName.MatchString(name) {
		return invalid("resource name %q is not valid: use 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit (for example \"config\")", clip(name))
	}
	return nil
}

// ValidRefName checks a branch or snapshot name: letters, digits, '.', '_', '-' and '/', starting with a letter or
// digit, at most 128 characters, and not all digits (those are revision numbers).
func ValidRefName(kind, name string) error {
	if !refName.MatchString(name) || allDigits.MatchString(name) || strings.Contains(name, "..") {
		return invalid("%s name %q is not valid: use 1 to 128 ASCII letters, digits, '.', '_', '-' or '/', starting with a letter or digit, not only digits and without \"..\" (for example \"try-discounts\")", kind, clip(name))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// closest returns up to three names near name, nearest first.
func closest(name string, names []string) []string { return suggest.Closest(name, names) }
