// Package dnssec owns Vigil's DNSSEC online signing: zone keys, their rollover timeline, the
// DS record a parent needs, and the Signer locations sign answers with. The control plane
// generates the keys and stores them sealed, so that neither the raft state nor the API ever
// holds a private key in clear. Each key is published, signs, retires and is removed at times
// that never leave a resolver with a signature it cannot check. A DNS location signs answers
// at answer time, with a signature cache bounded in memory.
//
// Keys are ECDSA P-256 with SHA-256 (algorithm 13). A zone has one combined signing key (a
// CSK, flags 257, which signs everything) or split keys (a KSK, flags 257, that signs the
// DNSKEY record set, and a ZSK, flags 256, that signs every other record set).
//
// Authenticated denial is by NSEC "black lies", as RFC 9824 (compact denial of existence)
// standardises them: a name that does not exist is answered NOERROR with an NSEC record at the
// name itself whose next name is its immediate successor ("\000.<name>") and whose type
// bitmap holds only NSEC, RRSIG and NXNAME; a name without the asked type gets an NSEC at
// the name listing the types it has. Both are signed at answer time, do not enumerate the
// zone, and need no knowledge of neighbouring names. A zone may instead prove denials with
// the NSEC chain of its names (Link; config.DenialNSEC): its signatures repeat and come from
// the cache, so names that do not exist cost no new signature, and the zone can be walked.
package dnssec
