// Package tlsconf holds Vigil's mutual TLS: certificates re-read without restarts,
// configurations for every internal link, roles, bounded handshakes, expiry metrics, a
// development CA. A node's certificate, key and CA are read from files and re-read when the
// files change; the server and client configurations built on them serve every internal link
// (raft, the control API, the data plane following the control plane); a certificate carries
// roles; a listener bounds what a client that has not finished its handshake can cost; the
// files' expiry shows as metrics; and the package creates a CA and node certificates for a
// development or demo network.
//
// A certificate's roles are the OrganizationalUnit values of its subject: "control" (a raft
// voter), "checker", "location" and "operator" (a person or tool that writes to the control
// API). Raft accepts only a peer with the control role; the control API lets a certificate
// with the control or operator role write and any certificate of the CA read.
//
// Voters without certificates share a cluster secret instead (secret.go): each derives the
// same CA from it and issues itself a leaf with the control role, so that raft runs over the
// same mutual TLS and only a holder of the secret completes the handshake.
package tlsconf
