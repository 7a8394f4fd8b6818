// Package dirname is the one alphabet of names that become a directory under a parent the program owns: a
// study's group and arm names, a sweep's run ids. A name read from a file (a plan, plan.json) is checked
// before it is joined to a path, so "../victim" or "/etc" can never lead a reader or writer outside its
// directory:
//
//	if err := dirname.Check("arm", name); err != nil { ... }
package dirname

import (
	"fmt"
	"regexp"
)

// MaxLen is the longest name, in bytes: far above any generated id, far below a file system's 255.
const MaxLen = 100

// safe is the alphabet: letters, digits, '-', '_', '+' and '.', not starting with '.' (so "." and ".." and
// hidden names are refused) nor with '+', 1 to MaxLen bytes. '+' is there for the exponent of a number in a
// sweep's run id (1e+06).
var safe = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._+-]{0,99}$`)

// Check returns an error naming what and name when name is not one safe directory name.
func Check(what, name string) error {
	if !safe.MatchString(name) {
		return fmt.Errorf("%s %q: want letters, digits, '-', '_', '+' or '.', not starting with '.' or '+' (at most %d bytes)", what, name, MaxLen)
	}
	return nil
}
