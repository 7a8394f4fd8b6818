package scale

import "golang.org/x/sys/unix"

// exchange swaps the directories a and b in one atomic step (renameat2 with RENAME_EXCHANGE), so that a crash
// leaves either the old directory or the new one at b, never neither.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
