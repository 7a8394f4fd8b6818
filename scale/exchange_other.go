//go:build !linux

package scale

import "errors"

// exchange is unsupported off Linux: replaceDir falls back to two renames.
func exchange(a, b string) error { return errors.ErrUnsupported }
