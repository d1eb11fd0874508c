package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at link time by the Makefile (-X main.version=...).
var version = "dev"

// buildVersion returns the link-time version, or the module version when built by go install.
func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

// buildCommit returns the VCS revision the binary was built from, with "+dirty" when the
// work tree had changes, or "unknown" (go test, or a build outside a repository).
func buildCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// runVersion prints the version, the commit and the Go version (vigil version, vigil
// --version).
func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if isHelpArg(args[0]) {
			printHelp(stdout, "version", nil)
			return exitOK
		}
		fmt.Fprintf(stderr, "vigil version: unexpected argument %q\n", args[0])
		shortUsage(stderr, "version")
		return exitUsage
	}
	fmt.Fprintf(stdout, "vigil %s\ncommit %s\n%s %s/%s\n", buildVersion(), buildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
