// The data-plane wire protocol between workers and reducers (protocol v3).
// Every frame is a fixed 16-byte little-endian header followed by a payload:
//
//   offset 0  u32 magic          "RSRV" (0x56525352)
//   offset 4  u16 version        kProtocolVersion
//   offset 6  u16 type           FrameType
//   offset 8  u32 payload_bytes  bytes that follow the header
//   offset 12 u32 reserved       0
//
// Conversation on one TCP stream:
//   worker  -> HELLO(session, rank, world, stream, streams, client nonce,
//                    options, liveness timeout, wire type of float32 sums)
//   reducer -> CHALLENGE(server nonce, whether a token is required)
//   worker  -> AUTH(HMAC-SHA256(token, transcript))
//   reducer -> WELCOME(reducer's own proof, largest piece it accepts)
//   reducer -> READY once every rank of the session has joined
//   worker  -> DATA ... ; reducer -> RESULT ... (any number, pipelined).
//              With kHelloResultParts a piece's result may come as several
//              RESULT frames, each a run of its elements, in order.
//   either  -> HEARTBEAT whenever it has written nothing for a fifth of the
//              liveness timeout (from WELCOME on), so silence means trouble
//   worker  -> BYE, or either side -> ERROR(code, message) then close.
// DATA and RESULT carry a 64-byte piece header followed by the elements.
// v3 added the wire type of float32 sums (Hello::wire, kPieceWideSum).
// The token never crosses the wire: only HMACs over both nonces do.
//
// This file only encodes and decodes bytes; it does no I/O. Thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace rs::protocol {

inline constexpr uint32_t kMagic = 0x56525352;  // "RSRV" in little-endian bytes
inline constexpr uint16_t kProtocolVersion = 3;
inline constexpr size_t kHeaderBytes = 16;
inline constexpr size_t kPieceHeaderBytes = 64;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kSessionIdBytes = 16;
// HELLO's payload: session, rank, world, stream, streams, client nonce,
// flags, liveness timeout, wire type.
inline constexpr size_t kHelloPayloadBytes = kSessionIdBytes + 4 + 4 + 2 + 2 + kNonceBytes + 4 + 4 + 4;  // 72
// Bounds on what a HELLO may ask for: a session allocates per rank and
// stream, so these keep a hostile or broken frame from exhausting memory.
inline constexpr uint32_t kMaxWorld = 16384;
inline constexpr uint16_t kMaxStreams = 64;
// Largest payload of any frame other than DATA/RESULT (error messages included).
inline constexpr uint32_t kMaxControlPayload = 64 * 1024;

enum class FrameType : uint16_t {
  kHello = 1,
  kChallenge = 2,
  kAuth = 3,
  kWelcome = 4,
  kReady = 5,
  kData = 6,
  kResult = 7,
  kError = 8,
  kBye = 9,
  kHeartbeat = 10,
  kMembership = 11,  // membership.h: failover reports, proposals, installs
};
const char* FrameTypeName(FrameType type);

using SessionId = std::array<uint8_t, kSessionIdBytes>;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;
std::string SessionIdToString(const SessionId& id);  // 32 hex digits

struct FrameHeader {
  uint16_t version = kProtocolVersion;
  FrameType type = FrameType::kError;
  uint32_t payload_bytes = 0;
};

// Decodes and validates a header. max_data_payload bounds DATA/RESULT frames
// (piece header + elements); control frames are bounded by kMaxControlPayload.
// Errors: kProtocol for a bad magic, unknown type or oversized payload;
// kVersion for another protocol version (the header is still returned through
// *out so the caller can answer in kind).
// `self` names the decoding side in the version message ("this reducer").
Status DecodeHeader(std::span<const uint8_t> bytes, uint64_t max_data_payload, FrameHeader* out,
                    std::string_view self = "this peer");
void EncodeHeader(const FrameHeader& header, uint8_t* out);  // writes kHeaderBytes

struct Hello {
  SessionId session{};
  uint32_t rank = 0;
  uint32_t world = 0;
  uint16_t stream = 0;   // index of this TCP stream among the rank's streams
  uint16_t streams = 1;  // streams the rank opens to this reducer
  Nonce client_nonce{};
  uint32_t flags = 0;        // HelloFlags; every rank of a session must agree
  // The worker's liveness timeout: the reducer heartbeats at a fifth of it
  // and counts the stream as gone after this long without a byte. 0: off.
  uint32_t liveness_ms = 0;
  // The type float32 sums travel in (see kPieceWideSum): kFloat32 for "off",
  // kBfloat16 or kFloat16. Every rank of a session must agree.
  DataType wire = DataType::kFloat32;
};
// The wire type's setting name: "off", "bfloat16" or "float16".
std::string_view WireTypeName(DataType wire);
// Parses a wire type setting ("off", "bfloat16"/"bf16", "float16"/"fp16");
// nullopt for anything else.
std::optional<DataType> ParseWireType(std::string_view name);
// Bits of Hello::flags.
enum HelloFlags : uint32_t {
  // The ranks keep the session going without a reducer they lose (see
  // docs/reliability.md): the reducer gives a silent worker some grace and
  // leaves quietly when the ranks drop it.
  kHelloFailover = 1,
  // The ranks take a piece's result in parts: RESULT frames whose offset and
  // count cover consecutive runs of the piece, first to last, together all
  // of it. The reducer then sends each run as soon as every rank's
  // contribution to it has arrived, instead of waiting for whole pieces.
  // Only when every rank of the session sets it; ranks need not agree.
  kHelloResultParts = 2,
};
inline constexpr uint32_t kKnownHelloFlags = kHelloFailover | kHelloResultParts;
// Keeps a connection alive and proves the sender is; see liveness.h. The
// fields carry the membership epoch and completion watermark (zero until a
// session uses them).
struct Heartbeat {
  uint32_t epoch = 0;
  uint32_t flags = 0;       // HeartbeatFlags
  uint64_t watermark = 0;
};
enum HeartbeatFlags : uint32_t {
  // Worker -> reducer: send a heartbeat as soon as the session's watermark
  // moves (the worker waits for it to free retained contributions).
  kHeartbeatWantWatermark = 1,
};
struct Challenge {
  Nonce server_nonce{};
  bool token_required = false;
};
struct Auth {
  Mac mac{};
};
struct Welcome {
  Mac mac{};  // the reducer's proof; all zero when it has no token
  uint64_t max_piece_bytes = 0;
};
struct ErrorFrame {
  Code code = Code::kInternal;
  std::string message;
};

// Bits of PieceHeader::flags.
enum PieceFlags : uint16_t {
  kPieceCrc = 1,  // `crc` holds the CRC32C of the elements
  // The piece belongs to a float32 sum that travels in the session's wire
  // type (Hello::wire). Its elements are in `dtype`: the wire type, or
  // float32 where the sender's values did not fit it (Inf, NaN, beyond the
  // range). A RESULT part likewise: the wire type when every element of the
  // float32 sum fits it, float32 otherwise. The op is always sum.
  kPieceWideSum = 2,
};
inline constexpr uint16_t kKnownPieceFlags = kPieceCrc | kPieceWideSum;

// The per-piece header of DATA and RESULT frames.
struct PieceHeader {
  uint64_t seq = 0;          // operation sequence number within the session
  uint32_t piece = 0;        // piece index within the operation
  uint32_t pieces = 0;       // pieces in the operation
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  uint16_t flags = 0;        // PieceFlags
  uint32_t crc = 0;          // CRC32C of the elements when kPieceCrc is set
  uint64_t total_count = 0;  // elements in the whole operation
  uint64_t offset = 0;       // first element of this piece (RESULT part: of the part)
  uint64_t count = 0;        // elements in this piece (RESULT part: in the part)
  uint32_t epoch = 0;        // membership epoch the operation's partition belongs to
  // DATA: the sender's completion watermark (every operation below it has
  // completed on that rank); RESULT: the session's (below it, on every rank).
  // Only failover sessions use it.
  uint64_t watermark = 0;
  uint64_t PayloadBytes() const { return count * DataTypeSize(dtype); }
};

// Encoders return header + payload, ready to write (DATA/RESULT: header +
// piece header only; the elements follow from the caller's buffer).
std::vector<uint8_t> EncodeHello(const Hello& hello, uint16_t version = kProtocolVersion);
std::vector<uint8_t> EncodeChallenge(const Challenge& challenge);
std::vector<uint8_t> EncodeAuth(const Auth& auth);
std::vector<uint8_t> EncodeWelcome(const Welcome& welcome);
std::vector<uint8_t> EncodeReady();
std::vector<uint8_t> EncodeBye();
std::vector<uint8_t> EncodeHeartbeat(const Heartbeat& heartbeat);
std::vector<uint8_t> EncodeError(const ErrorFrame& error);
void EncodePieceFrame(FrameType type, const PieceHeader& piece,
                      std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes>* out);
// Sets kPieceCrc and the CRC in a frame EncodePieceFrame wrote.
void SetPieceCrc(uint32_t crc, std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes>* frame);

// Payload decoders; each checks the exact payload size and field ranges and
// says what was wrong, as kProtocol: the peer sent a frame this side cannot
// take.
Status DecodeHello(std::span<const uint8_t> payload, Hello* out);
Status DecodeChallenge(std::span<const uint8_t> payload, Challenge* out);
Status DecodeAuth(std::span<const uint8_t> payload, Auth* out);
Status DecodeWelcome(std::span<const uint8_t> payload, Welcome* out);
Status DecodeError(std::span<const uint8_t> payload, ErrorFrame* out);
Status DecodeHeartbeat(std::span<const uint8_t> payload, Heartbeat* out);
// Decodes the first kPieceHeaderBytes of a DATA/RESULT payload and checks it
// against payload_bytes (the frame's payload size) and max_piece_bytes.
Status DecodePieceHeader(std::span<const uint8_t> bytes, uint32_t payload_bytes,
                         uint64_t max_piece_bytes, PieceHeader* out);

}  // namespace rs::protocol
