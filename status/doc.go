// Package status owns what a Vigil node tells the people who run it: the JSON status API under
// /v1/ (a location's verdicts with their evidence, the checkers it hears and what it would answer;
// a checker's probes and self-health; every node's members, configuration and version), the
// /healthz and /readyz probes, /metrics, the status page of a location (a matrix of checks by
// region, embedded in the binary) and the client and tables behind `vigil status`.
//
// The package reads a node through three small interfaces, LocationView, CheckerView and
// NodeView, written in terms of the types that compute the data (quorum.Verdict and
// quorum.Explanation, routing.Result, checker.Report and checker.Result, control.WatcherStatus).
// It computes nothing of its own beyond arranging that data: the verdict, its evidence and the
// answer come from the quorum and routing packages, so what the page shows is what DNS serves.
//
// Every response is JSON in the shapes of wire.go, which the client decodes with the same types;
// every error is {"error": "..."} with a 4xx or 5xx status.
package status
