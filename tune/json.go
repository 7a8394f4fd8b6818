package tune

import "github.com/smallinit/smallinit/internal/finitejson"

// MarshalJSON writes a diverged trial's +Inf loss as null, which encoding/json cannot write.
func (p Point) MarshalJSON() ([]byte, error) { return finitejson.Marshal(p) }

// MarshalJSON writes a non-finite chosen loss (every trial diverged) as null.
func (r Result) MarshalJSON() ([]byte, error) { return finitejson.Marshal(r) }
