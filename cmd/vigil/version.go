package main

import (
	"context"
	"fmt"
	"io"
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

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, "vigil", buildVersion())
	return 0
}
