package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/internal/safetext"
)

// runRecover makes a stopped voter the only voter of its cluster (vigil recover), for a
// cluster that lost a majority of its voters for good.
func runRecover(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host, _ := os.Hostname()
	dataDir := fs.String("data-dir", "vigil-data", "the stopped voter's data directory, as its agent's -data-dir")
	id := fs.String("id", host, "the voter's id, as its agent's -id")
	raftAddr := fs.String("raft-addr", "127.0.0.1:7000", "the address its raft transport listens on and advertises, as its agent's -raft-addr")
	sure := fs.Bool("majority-lost", false, "confirm that every other voter is stopped and a majority of them is gone for good; without it nothing is changed")
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vigil recover: unexpected argument %q (flags only)\n", fs.Arg(0))
		shortUsage(stderr, "recover")
		return exitUsage
	}
	if !*sure {
		fmt.Fprintln(stderr, "vigil recover: this makes the voter the only voter of its cluster; a cluster whose majority still runs would be split in two.\n"+
			"Stop every voter first, then run it again with -majority-lost on the one voter to keep.")
		return exitUsage
	}
	res, err := control.Recover(control.RecoverConfig{DataDir: filepath.Join(*dataDir, "control"), ID: *id, RaftAddr: *raftAddr})
	if err != nil {
		fmt.Fprintf(stderr, "vigil recover: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "recovered: %s is the only voter of its cluster at %s, with the state up to raft index %d\n", *id, *raftAddr, res.Index)
	fmt.Fprintf(stdout, "next: start its agent as before, without -bootstrap; then start new voters with -join\n")
	for _, v := range slices.Sorted(maps.Keys(res.Voters)) {
		if v != *id {
			fmt.Fprintf(stdout, "then remove the lost voter %s: vigil voters remove %s\n", v, v)
		}
	}
	return exitOK
}

// runVoters lists the control plane's voters or removes one (vigil voters).
func runVoters(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := dispatchHelp("voters", args, stdout, stderr); stop {
		return code
	}
	var cf clientFlags
	fs := flag.NewFlagSet("voters "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf.register(fs)
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	if code, stop := parseFlagsAs(ctx, "voters "+args[0], fs, args[1:], stdout, stderr); stop {
		return code
	}
	cf.resolve(fs)
	want := 0
	if args[0] == "remove" {
		want = 1
	}
	if fs.NArg() != want {
		fmt.Fprintf(stderr, "vigil voters %s: want %d argument(s), got %q\n", args[0], want, fs.Args())
		shortUsage(stderr, "voters "+args[0])
		return exitUsage
	}
	c, err := cf.client()
	if err != nil {
		return usageErr(stderr, "voters "+args[0], err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if args[0] == "remove" {
		res, err := c.RemoveVoter(ctx, fs.Arg(0))
		if err != nil {
			return cf.fail(stderr, "voters remove", err)
		}
		fmt.Fprintf(stdout, "removed voter %s (index %d)\n", safetext.Escape(fs.Arg(0)), res.Index)
		return exitOK
	}
	cv, err := c.Cluster(ctx)
	if err != nil {
		return cf.fail(stderr, "voters list", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT ADDRESS\tAPI\tROLE")
	ids := slices.Sorted(maps.Keys(cv.Servers))
	for id := range cv.APIs {
		if _, ok := cv.Servers[id]; !ok {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		role, addr := "follower", cv.Servers[id]
		switch {
		case addr == "":
			role, addr = "not in raft (remove it)", "-"
		case id == cv.Leader:
			role = "leader"
		}
		api := cv.APIs[id]
		if api == "" {
			api = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", safetext.Escape(id), safetext.Escape(addr), safetext.Escape(api), role)
	}
	tw.Flush()
	return exitOK
}
