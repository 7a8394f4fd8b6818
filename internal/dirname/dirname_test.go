package dirname

import (
	"strings"
	"testing"
)

// TestCheckKeepsNamesInsideTheirParent: a name that could leave its parent directory (a separator, "." or
// "..", a hidden name), an empty or overlong name and control characters are refused; generated sweep run
// ids and ordinary arm names pass.
func TestCheckKeepsNamesInsideTheirParent(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"gamma-1.0", true},
		{"007-0.5_1e+06-3f2a9c1b", true},
		{"-x", true},
		{"a_b", true},
		{strings.Repeat("a", MaxLen), true},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"../../victim", false},
		{"a/b", false},
		{"/etc", false},
		{`a\b`, false},
		{"a\nb", false},
		{"+1", false},
		{"é", false},
		{strings.Repeat("a", MaxLen+1), false},
	} {
		err := Check("run", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "run ") {
			t.Errorf("Check(%q): %v does not name what", tc.name, err)
		}
	}
}
