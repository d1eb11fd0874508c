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
// control voter and every signing location holds (by default the data plane's gossip key),
// and that never enters the raft state, the API or a log. A sealed key is bound to its zone
// and key tag: moved to another zone or key, it does not open.
type Sealer struct {
	aead cipher.AEAD
}

// sealInfo is the HKDF info that makes the seal key differ from any other use of the secret.
const sealInfo = "vigil dnssec seal key v1"

// NewSealer derives the seal key from secret, which must hold at least 16 bytes.
func NewSealer(secret []byte) (*Sealer, error) {
	if len(secret) < 16 {
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
	return &Sealer{aead: aead}, nil
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

// open returns the plain private key of sealed, bound to apex and tag.
func (s *Sealer) open(sealed []byte, apex string, tag uint16) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, errOpen
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], sealAAD(apex, tag))
	if err != nil {
		return nil, errOpen
	}
	return plain, nil
}
