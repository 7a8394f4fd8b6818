package override

import (
	"strings"
	"testing"
)

// TestCheckDepthBoundsNesting: real documents pass, and every way of nesting past MaxDepth (inline tables,
// arrays, table headers, dotted keys) is refused from the raw text, while brackets and dots inside strings and
// comments do not count.
func TestCheckDepthBoundsNesting(t *testing.T) {
	deep := MaxDepth + 1
	for _, tc := range []struct {
		name string
		doc  string
		ok   bool
	}{
		{"plan", "name = \"x\"\n[budget]\nminutes = 1.5\n[[group]]\nname = \"g\"\n[[group.arm]]\nname = \"a\"\nset = { model.hidden_size = 64, init = { gamma = [0.5, 1.0] } }\n", true},
		{"grid", "base = \"run.toml\"\n[axes]\n\"init.gamma\" = [0.5, 1]\n", true},
		{"floats are not dotted keys", "a = [1.5, 2.5, 3.25]\nb = 1.0.0", true},
		{"brackets in strings", "a = \"" + strings.Repeat("{[", 1000) + "\"\nb = '''" + strings.Repeat("[", 1000) + "\n'''\n", true},
		{"brackets in comments", "# " + strings.Repeat("{", 1000) + "\na = 1\n", true},
		{"siblings do not add up", "a = [" + strings.Repeat("[1], ", 1000) + "]\nb = {" + strings.Repeat("x = {y = 1}, ", 1) + "}\n", true},
		{"exactly MaxDepth arrays", "a = " + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1), true},
		{"inline tables", "a = " + strings.Repeat("{b = ", deep) + "1" + strings.Repeat("}", deep), false},
		{"million inline tables", "a = " + strings.Repeat("{b = ", 1_000_000), false},
		{"arrays", "a = " + strings.Repeat("[", deep), false},
		{"table header", "[" + strings.Repeat("a.", deep) + "b]\n", false},
		{"array of tables header", "[[" + strings.Repeat("a.", deep) + "b]]\n", false},
		{"dotted key", strings.Repeat("a.", deep) + "b = 1\n", false},
		{"dotted keys under a header", "[" + strings.Repeat("a.", MaxDepth/2) + "a]\n" + strings.Repeat("b.", MaxDepth/2) + "c = 1\n", false},
		{"arrays of inline tables", "a = " + strings.Repeat("[{b = ", deep/2+1), false},
	} {
		err := CheckDepth([]byte(tc.doc))
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckDepth = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: error %q does not name the line", tc.name, err)
		}
	}
}
