package data

import "testing"

// TestMemberNameStaysInsideThePackage checks the names an archive member may have.
func TestMemberNameStaysInsideThePackage(t *testing.T) {
	cases := []struct {
		name string
		dir  bool
		want string
		ok   bool
	}{
		{"package/data/a.txt", false, "data/a.txt", true},
		{"package/./data//a.txt", false, "data/a.txt", true},
		{"package/", true, "", true},
		{"package", false, "", false},
		{"../x", false, "", false},
		{"package/../../x", false, "", false},
		{"package/a/../b", false, "", false},
		{"/etc/passwd", false, "", false},
		{`package\..\x`, false, "", false},
		{"", false, "", false},
	}
	for _, c := range cases {
		got, err := memberName(c.name, c.dir)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("memberName(%q) = %q, %v; want %q, ok=%v", c.name, got, err, c.want, c.ok)
		}
	}
}
