// Package tlsconf holds Vigil's mutual TLS: a node's certificate, key and CA read from files
// and re-read when the files change (no restart), the server and client configurations built
// on them for every internal link (raft, the control API, the data plane following the
// control plane), the roles a certificate carries, a listener that bounds what a client that
// has not finished its handshake can cost, the expiry of the files as metrics, and the
// creation of a CA and node certificates for a development or demo network.
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
