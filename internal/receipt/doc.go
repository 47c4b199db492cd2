// Package receipt is the run receipt: a hash chain of a run's records (each
// tool call and the result write) and an Ed25519-signed receipt over the
// chain's tip, which anyone holding the gateway's public key can check.
//
// # Canonical form
//
// Every record and every receipt payload is one JSON object in the RFC
// 8785 canonical form (JCS, Canonical): members sorted by the UTF-16 code
// units of their names, no whitespace, strings as JSON.stringify writes
// them, numbers as ECMAScript writes doubles. The bytes are what is hashed
// and signed, and they travel as they are (base64 in a Document): a
// verifier hashes and checks the bytes it received, never a
// re-serialisation, and refuses bytes that are not their own canonical
// form. testdata/vector.json holds a test vector.
//
// # The chain
//
// A run's records are numbered from 1 (seq). Each names its run, its
// schemaVersion (SchemaVersion), an eventId, and prev: the lowercase hex
// SHA-256 of the previous record's bytes (64 zeros for the first). A
// record's hash is the SHA-256 of its bytes. A call record holds the
// call's facts (tool, outputId, status, code, counts, the observed label,
// each entry's label and handle, exit code, start and duration) and, for a
// call that answered a result, responseDigest: "sha256:" and the hex
// SHA-256 of the exact bytes of the result object the gateway answered
// (the REST body; the MCP face's structuredContent and text carry the
// same bytes). A result record holds the digest of the result's value as
// written, its documents' count, its label and receipt label.
//
// # The receipt
//
// A receipt payload (Payload) names the run, its ceiling, the chain's
// length and tip, the join of the labels the agent observed, the result's
// digest and label, the times, the gateway's version and the signing key's
// id; the signature is Ed25519 over the payload's bytes. A key's id is the
// lowercase hex of the first 16 bytes of the SHA-256 of its 32-byte raw
// public key (KeyID). Keys are PEM: the private key PKCS#8 ("openssl
// genpkey -algorithm ed25519"), public keys SubjectPublicKeyInfo ("openssl
// pkey -pubout"), so that "openssl pkeyutl -verify -rawin" checks a
// payload with no code of ours.
package receipt
