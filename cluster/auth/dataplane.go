package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// The data-plane key of a worker's registration (issue 14, docs/SECURITY.md):
// a worker MACs its progress frames with it. It is derived, not stored:
// every manager of the region computes the same key from the cluster token
// and what its ledger holds of the registration, so the key never enters
// the ledger, a bundle or a log, and any manager verifies frames sent to
// it. A re-registration (a new join, so a new registration identity) gives
// a new key and key id; the old key stops verifying once the ledger moves.

// Domain-separation labels: the key and the key id never collide with
// another use of the cluster token or with each other.
const (
	dataPlaneKeyLabel   = "strata progress key v1"
	dataPlaneKeyIDLabel = "strata progress key id v1"
)

// DataPlaneKeyBytes is the length of a data-plane key (HMAC-SHA256).
const DataPlaneKeyBytes = sha256.Size

// DataPlaneKey returns the key id and key of worker's registration.
// registration is the registration's identity in a fixed encoding (the
// worker's join HLC, binary): the key is
// HMAC-SHA256(clusterToken, label ‖ 0 ‖ worker ‖ 0 ‖ registration), the key
// id the first 4 bytes (big endian) of SHA-256(id label ‖ 0 ‖ worker ‖ 0 ‖
// registration): public, it only names which registration a frame claims.
func DataPlaneKey(clusterToken, worker string, registration []byte) (keyID uint32, key []byte) {
	mac := hmac.New(sha256.New, []byte(clusterToken))
	writeParts(mac.Write, dataPlaneKeyLabel, worker, registration)
	key = mac.Sum(nil)
	h := sha256.New()
	writeParts(h.Write, dataPlaneKeyIDLabel, worker, registration)
	return binary.BigEndian.Uint32(h.Sum(nil)), key
}

// writeParts writes label ‖ 0 ‖ worker ‖ 0 ‖ registration. A worker id
// never holds a zero byte (fsm's name rules), so the parts cannot shift.
func writeParts(write func([]byte) (int, error), label, worker string, registration []byte) {
	_, _ = write([]byte(label))
	_, _ = write([]byte{0})
	_, _ = write([]byte(worker))
	_, _ = write([]byte{0})
	_, _ = write(registration)
}
