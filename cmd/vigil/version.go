package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set at link time by the Makefile (-X main.version=...).
var version = "dev"

// commit and commitTime are set at link time by the release (-X main.commit=...,
// -X main.commitTime=...), for builds whose VCS stamp Go leaves out (a git worktree, whose
// .git is a file); the stamp of -buildvcs wins where there is one.
var commit, commitTime string

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
// work tree had changes, and the commit's time (RFC 3339, UTC) when the build recorded it:
// the time of the source, not of the build, so that two builds of one commit stay
// byte-identical. "unknown" for go test, a build outside a repository or with -buildvcs=false.
func buildCommit() (rev, at string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		case "vcs.time":
			at = s.Value
		}
	}
	if rev == "" {
		rev, at = commit, commitTime
	}
	if rev == "" {
		return "unknown", ""
	}
	if dirty && !strings.HasSuffix(rev, "+dirty") {
		rev += "+dirty"
	}
	return rev, at
}

// runVersion prints the version, the commit (with its time where the build recorded it)
// and the Go version (vigil version, vigil --version).
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
	rev, at := buildCommit()
	if at != "" {
		rev += " (" + at + ")"
	}
	fmt.Fprintf(stdout, "vigil %s\ncommit %s\n%s %s/%s\n", buildVersion(), rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
