// Package chartcheck tests the Helm chart of deploy/helm/vigil offline, with helm's own Go
// packages. It runs the linter, renders the templates for each values file and decodes every
// rendered object strictly against the Kubernetes API types (an unknown field fails), then
// checks for what the API server would accept but a running network would not (a selector that
// selects nothing, a port name no container has, an agent flag vigil does not know).
//
// It is a module of its own so that vigil's binary never links helm or the Kubernetes API:
// the root module's `go test ./...` does not descend here; `make test` runs it.
package chartcheck
