package main

import (
	"fmt"
	"strconv"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/sweep"
)

// jobsFlag is --jobs: "auto" (a packing probe chooses one run on all cores or one run per core, see
// sweep.AutoJobs) or a number of runs trained at once.
type jobsFlag int

// UnmarshalText parses "auto" or a positive count.
func (j *jobsFlag) UnmarshalText(b []byte) error {
	if string(b) == "auto" {
		*j = jobsFlag(sweep.AutoJobs)
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 1 || n > kernel.MaxWorkers {
		return fmt.Errorf("%q: want auto or a count in [1, %d]", b, kernel.MaxWorkers)
	}
	*j = jobsFlag(n)
	return nil
}
