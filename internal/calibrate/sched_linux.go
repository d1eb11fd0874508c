package calibrate

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// schedReader reads the kernel's scheduler statistics of every thread of the process
// (/proc/self/task/*/schedstat: the time a thread ran, and the time it waited runnable on a
// run queue) and returns what they grew by since the last read.
type schedReader struct {
	last map[string][2]time.Duration // by thread: ran, waited
}

// read returns how long the process's threads ran and waited runnable since the last read;
// ok is false when the statistics cannot be read (a kernel without them).
func (s *schedReader) read() (ran, waited time.Duration, ok bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, 0, false
	}
	now := make(map[string][2]time.Duration, len(tasks))
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			return 0, 0, false
		}
		r, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		w, err2 := strconv.ParseInt(string(f[1]), 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		cur := [2]time.Duration{time.Duration(r), time.Duration(w)}
		now[t.Name()] = cur
		if prev, seen := s.last[t.Name()]; seen || s.last != nil {
			// A thread new since the last read counts from zero: all it did is new.
			ran += cur[0] - prev[0]
			waited += cur[1] - prev[1]
		}
	}
	first := s.last == nil
	s.last = now
	return ran, waited, !first
}
