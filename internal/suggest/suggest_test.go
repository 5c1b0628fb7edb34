package suggest

import (
	"fmt"
	"testing"
)

func TestClosest(t *testing.T) {
	for _, c := range []struct {
		name  string
		names []string
		want  string
	}{
		{"nmae", []string{"id", "name", "email"}, "[name]"},
		{"dco", []string{"doc", "other"}, "[doc]"},
		{"catalogue", []string{"catalog", "orders"}, "[catalog]"},
		{"expectedHead", []string{"expected_head", "branch"}, "[expected_head]"},
		{"featur", []string{"main", "feature"}, "[feature]"},
		{"PRISE", []string{"price", "prize", "rise", "zzzzz"}, "[price prize rise]"},
		{"x", []string{"abcdef"}, "[]"},
		{"", []string{"a"}, "[a]"},
	} {
		if got := fmt.Sprint(Closest(c.name, c.names)); got != c.want {
			t.Errorf("Closest(%q, %v) = %s, want %s", c.name, c.names, got, c.want)
		}
	}
}
