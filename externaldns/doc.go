// Package externaldns is Vigil's ExternalDNS webhook provider: record sets that ExternalDNS
// derives from Services and Ingresses become Vigil record sets. It is the HTTP server that
// Kubernetes' ExternalDNS (provider "webhook") talks to; a record set gets health checks when
// its resource asks for them.
//
// The protocol (ExternalDNS's provider/webhook/api, media type
// "application/external.dns.webhook+json;version=1"):
//
//	GET  /                  negotiate: the domain filter (the zones the provider manages)
//	GET  /records           every record set of those zones, as ExternalDNS endpoints
//	POST /adjustendpoints   the endpoints ExternalDNS wants, as the provider will store them
//	POST /records           apply changes (create, updateOld, updateNew, delete); 204
//
// The provider trusts whoever reaches its socket (ExternalDNS sends no credentials), so it
// answers only requests that ExternalDNS could have sent (guard.go): a Host naming loopback,
// localhost or an allowed host (else 421), no browser's Origin or Sec-Fetch-Site (else 403),
// and POSTs of the webhook media type (else 415). It changes only the record sets it created,
// which it marks with its owner name in their managed_by, and never a zone's apex NS
// (ownership.go).
//
// Every write goes through the control plane's HTTP API with a bearer token: one of scope
// write:zone=<zone>.,check=edns- suffices (the zones it manages, the checks it names). An endpoint
// becomes one record set: its DNS name, type, TTL and targets. Provider-specific properties,
// which ExternalDNS takes from the annotations "external-dns.alpha.kubernetes.io/webhook-<name>"
// of a resource (as "webhook/<name>"), add health checks:
//
//	webhook-vigil-health-check: http | https | tcp   a check of each target (A and AAAA)
//	webhook-vigil-health-port:  8080                  the port probed (default 80, 443; tcp: required)
//	webhook-vigil-health-path:  /healthz              the HTTP path (default /)
//	webhook-vigil-policy:       multivalue | simple   the routing policy (default multivalue with checks)
//
// Each target then gets its own check, "edns-" and a hash of the record set and target, that
// the provider creates before the record set and deletes after it.
package externaldns
