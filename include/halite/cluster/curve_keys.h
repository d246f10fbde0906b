// ZeroMQ CURVE keys of the cluster masters.
//
// Each master has one CURVE key pair. The secret stays in its own pki_dir
// (`<pki_dir>/peer_curve.key`, mode 0600: the z85 public key on the first line, the z85 secret
// key on the second). The public key is published in the shared directory as
// `<cluster_pki_dir>/peers/<id>.curve` (one z85 line) so that the other masters can
// authenticate it.
//
// Every function is thread-safe and safe when several processes share the directories, but
// blocks on disk: call it from main or the blocking pool, never from an event loop.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "halite/common/result.h"

namespace halite::cluster {

// z85 text, 40 characters each (ZeroMQ's printable form of a 32-byte key).
struct CurveKeyPair {
  std::string public_key;
  std::string secret_key;
};

// Error::FailedPrecondition unless the linked libzmq supports CURVE (zmq_has("curve")).
Status CheckCurveSupported();

// True when `id` can name a file in peers/: not empty, no '/', no NUL, not "." or "..".
bool IsValidPeerId(std::string_view id);

// `<cluster_pki_dir>/peers/<id>.curve`.
std::filesystem::path PeerCurveKeyPath(const std::filesystem::path& cluster_pki_dir,
                                       std::string_view id);

// Parses one z85 public key, surrounding whitespace allowed. InvalidArgument otherwise.
Result<std::string> ParseCurvePublicKey(std::string_view text);

// True when both keys are z85 and the public key is the one of the secret key.
bool IsCurveKeyPair(const CurveKeyPair& pair);

// z85 (40 characters, already validated) -> the 32 raw bytes.
std::string CurveKeyBytes(std::string_view z85);

// Loads this master's key pair from `pki_dir`, creating it (mode 0600) on first start, and
// publishes its public key as peers/<self_id>.curve in `cluster_pki_dir`. Safe when two
// processes race on the same directories: one pair wins and both return it.
// Errors: FailedPrecondition when libzmq lacks CURVE, or when peers/<self_id>.curve already
// holds another key (the message says what to remove); DataLoss for a corrupt
// peer_curve.key; InvalidArgument for a bad `self_id`; the fs.h errors for disk trouble.
Result<CurveKeyPair> LoadOrCreateCurveKeys(const std::filesystem::path& pki_dir,
                                           const std::filesystem::path& cluster_pki_dir,
                                           std::string_view self_id);

// Reads and parses peers/<id>.curve. NotFound when the peer has not published a key yet;
// InvalidArgument when the file does not hold one z85 public key.
Result<std::string> ReadPeerCurveKey(const std::filesystem::path& cluster_pki_dir,
                                     std::string_view id);

}  // namespace halite::cluster
