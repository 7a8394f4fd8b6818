package tune

import "github.com/smallinit/smallinit/internal/finitejson"

// MarshalJSON writes a diverged trial's +Inf loss as null, which encoding/json cannot write.
func (p Point) MarshalJSON() ([]byte, error) { return finitejson.Marshal(p) }

// MarshalJSON writes a non-finite chosen loss (every trial diverged) as null.
func (r Result) MarshalJSON() ([]byte, error) { return finitejson.Marshal(r) }

// MarshalJSON writes a diverged trial's +Inf loss as null.
func (t GridTrial) MarshalJSON() ([]byte, error) { return finitejson.Marshal(t) }

// MarshalJSON writes a rate's +Inf mean loss (a seed diverged) as null.
func (g GridRate) MarshalJSON() ([]byte, error) { return finitejson.Marshal(g) }

// MarshalJSON writes an unmeasured cost (NaN) as null.
func (c TransferCheck) MarshalJSON() ([]byte, error) { return finitejson.Marshal(c) }
