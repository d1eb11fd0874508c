// Package history owns what a location remembers of its past: verdict changes, answer changes,
// and each check's availability over the last hour, day and week. It keeps each verdict change
// (when, from which state to which, and the counts that decided it), each change of what a
// record set may answer, and how long each check was healthy.
//
// A Store keeps a bounded amount per check in memory (a ring of its latest changes and
// availability buckets: 60 one-minute and 168 one-hour slots) and appends every change to a
// log on disk, synced before Record returns, so that a restarted location keeps its history.
// The log is two files, the current one and the previous one, each at most half of
// Options.MaxBytes: when the current one is full it becomes the previous one, and the oldest
// records go. A record whose checksum fails (a torn write at a crash, a damaged disk) ends the
// readable part of a file: Open logs it and goes on; in the current file the damaged tail is
// cut off, so that new records follow the last good one.
//
// Availability counts only time the location observed: the log holds a mark at least every
// Options.Mark, and a silence longer than two marks (the location was down) counts as neither
// healthy nor unhealthy. Every method takes the time as an argument; the Store reads no clock.
package history
