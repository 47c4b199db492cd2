package receipt

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

// KeyID is the id of an Ed25519 public key: the lowercase hex of the first
// 16 bytes of the SHA-256 of its 32 raw bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:16])
}

// ParsePrivateKey reads one PEM "PRIVATE KEY" block (PKCS#8) holding an
// Ed25519 key, as "openssl genpkey -algorithm ed25519" writes it. Nothing
// of the key is in its errors.
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("receipt: not a PEM PRIVATE KEY block (openssl genpkey -algorithm ed25519 writes one)")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, errors.New("receipt: the PRIVATE KEY block is not PKCS#8")
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("receipt: the private key is %T, not Ed25519", k)
	}
	return key, nil
}

// ParsePublicKeys reads every PEM "PUBLIC KEY" block (SubjectPublicKeyInfo)
// of b; each must hold an Ed25519 key, and there must be at least one.
func ParsePublicKeys(b []byte) ([]ed25519.PublicKey, error) {
	var out []ed25519.PublicKey
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "PUBLIC KEY" {
			continue
		}
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("receipt: a PUBLIC KEY block: %w", err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("receipt: a public key is %T, not Ed25519", k)
		}
		out = append(out, pub)
	}
	if len(out) == 0 {
		return nil, errors.New("receipt: no PEM PUBLIC KEY block (openssl pkey -in key.pem -pubout writes one)")
	}
	return out, nil
}

// PublicKeyPEM is pub as a PEM "PUBLIC KEY" block.
func PublicKeyPEM(pub ed25519.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err) // an ed25519.PublicKey always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Keyring is the public keys a verifier accepts, by key id: the signing
// key's and those of keys rotated out or in.
type Keyring map[string]ed25519.PublicKey

// NewKeyring holds pubs.
func NewKeyring(pubs ...ed25519.PublicKey) Keyring {
	k := Keyring{}
	for _, p := range pubs {
		k[KeyID(p)] = p
	}
	return k
}

// Signer signs receipt payloads with one key.
type Signer struct {
	key ed25519.PrivateKey
	id  string
}

// NewSigner signs with key.
func NewSigner(key ed25519.PrivateKey) *Signer {
	return &Signer{key: key, id: KeyID(key.Public().(ed25519.PublicKey))}
}

// KeyID is the id of the signer's public key.
func (s *Signer) KeyID() string { return s.id }

// Public is the signer's public key.
func (s *Signer) Public() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign is the Ed25519 signature of b.
func (s *Signer) Sign(b []byte) []byte { return ed25519.Sign(s.key, b) }
