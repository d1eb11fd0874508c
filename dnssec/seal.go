package dnssec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
)

// Sealer seals and opens zones' private keys with a key derived from a secret that every
// control voter and every signing location holds, and no other node (a checker, a reader of
// the API): it never enters the raft state, the API or a log. A sealed key is bound to its
// zone and key tag: moved to another zone or key, it does not open. A Sealer may also hold
// older secrets, which only open: the keys sealed before a change of secret keep signing
// until a rollover replaces them.
type Sealer struct {
	aead cipher.AEAD
	// older open keys sealed with a previous secret; they never seal.
	older []cipher.AEAD
}

// sealInfo is the HKDF info that makes the seal key differ from any other use of the secret.
const sealInfo = "vigil dnssec seal key v1"

// MinSecretLen is the least number of bytes of a seal secret (vigil keyring generate makes
// 32 random ones).
const MinSecretLen = 16

// NewSealer derives the seal key from secret, and an opening key from each of older (previous
// secrets, tried in turn when secret does not open a key). Each must hold at least
// MinSecretLen bytes.
func NewSealer(secret []byte, older ...[]byte) (*Sealer, error) {
	aead, err := sealAEAD(secret)
	if err != nil {
		return nil, err
	}
	s := &Sealer{aead: aead}
	for i, o := range older {
		a, err := sealAEAD(o)
		if err != nil {
			return nil, fmt.Errorf("dnssec: older secret %d: %w", i+1, err)
		}
		s.older = append(s.older, a)
	}
	return s, nil
}

// sealAEAD derives the AEAD of one seal secret.
func sealAEAD(secret []byte) (cipher.AEAD, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("dnssec: seal secret of %d bytes: want at least 16", len(secret))
	}
	key, err := hkdf.Key(sha256.New, secret, nil, sealInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("dnssec: derive seal key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("dnssec: seal key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("dnssec: seal key: %w", err)
	}
	return aead, nil
}

func sealAAD(apex string, tag uint16) []byte {
	return []byte(apex + "/" + strconv.Itoa(int(tag)))
}

// seal returns nonce || ciphertext of plain, bound to apex and tag.
func (s *Sealer) seal(plain []byte, apex string, tag uint16) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("dnssec: seal: %w", err)
	}
	return s.aead.Seal(nonce, nonce, plain, sealAAD(apex, tag)), nil
}

// errOpen is the error of a sealed key that does not open: another secret, or tampering.
var errOpen = errors.New("dnssec: the sealed private key does not open with this seal secret")

// open returns the plain private key of sealed, bound to apex and tag, opened with the
// secret or else one of the older ones.
func (s *Sealer) open(sealed []byte, apex string, tag uint16) ([]byte, error) {
	for _, a := range append([]cipher.AEAD{s.aead}, s.older...) {
		n := a.NonceSize()
		if len(sealed) < n+a.Overhead() {
			return nil, errOpen
		}
		if plain, err := a.Open(nil, sealed[:n], sealed[n:], sealAAD(apex, tag)); err == nil {
			return plain, nil
		}
	}
	return nil, errOpen
}

// Opens reports whether the private half of every key of zk opens with s (without keeping it):
// a check of a secret against the keys a control plane holds.
func (s *Sealer) Opens(zk *ZoneKeys) bool {
	for _, k := range zk.Keys {
		raw, err := s.open(k.Sealed, zk.Zone, k.Tag)
		if err != nil {
			return false
		}
		clear(raw)
	}
	return true
}

// tsigAAD binds a sealed TSIG secret to its key's name. A zone key's binding ends in its tag's
// digits, a TSIG key's in the final dot of its name: one never opens as the other.
func tsigAAD(name string) []byte { return []byte("tsig-key/" + name) }

// SealTSIG seals the secret of the TSIG key name (its canonical form: lower case, absolute),
// for the control plane to store: only holders of the seal secret open it.
func (s *Sealer) SealTSIG(name string, secret []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(secret)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("dnssec: seal: %w", err)
	}
	return s.aead.Seal(nonce, nonce, secret, tsigAAD(name)), nil
}

// OpenTSIG returns the secret of the TSIG key name that SealTSIG sealed, opened with the
// secret or else one of the older ones.
func (s *Sealer) OpenTSIG(name string, sealed []byte) ([]byte, error) {
	for _, a := range append([]cipher.AEAD{s.aead}, s.older...) {
		n := a.NonceSize()
		if len(sealed) < n+a.Overhead() {
			return nil, errors.New("dnssec: the sealed TSIG secret is too short: it was not sealed by a voter")
		}
		if plain, err := a.Open(nil, sealed[:n], sealed[n:], tsigAAD(name)); err == nil {
			return plain, nil
		}
	}
	return nil, errors.New("dnssec: the sealed TSIG secret does not open with this seal secret (give this node the voters' -dnssec-secret-file)")
}
