// Package jobstates holds the River job states our jobs are unique
// among.
package jobstates

import "github.com/riverqueue/river/rivertype"

// InFlight are the states of a job that is still going to run or is
// running. Our jobs are unique among these only: River's default set also
// holds completed jobs, which would suppress a run needed again soon after
// the last one finished (a second dereference of a blob within one GC
// review delay, a counter fold right after the previous fold).
func InFlight() []rivertype.JobState {
	return []rivertype.JobState{
		rivertype.JobStateAvailable,
		rivertype.JobStatePending,
		rivertype.JobStateRunning,
		rivertype.JobStateRetryable,
		rivertype.JobStateScheduled,
	}
}
