//go:build !unix

package checker

// openFileLimit is unknown here.
func openFileLimit() uint64 { return 0 }
