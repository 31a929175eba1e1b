#include "protocol/wire.h"

#include <cstdio>
#include <cstring>

#include "protocol/byte_io.h"

namespace rs::protocol {
namespace {

constexpr size_t kHeartbeatBytes = 16;
constexpr size_t kChallengeBytes = kNonceBytes + 4;
constexpr size_t kWelcomeBytes = kMacBytes + 8;
constexpr size_t kErrorHeadBytes = 4;

// Where each field of the frame header lies (byte offsets from the frame's
// start, little-endian): the one table EncodeHeader and DecodeHeader read.
struct HeaderField {
  static constexpr size_t kMagic = 0;     // u32
  static constexpr size_t kVersion = 4;   // u16
  static constexpr size_t kType = 6;      // u16
  static constexpr size_t kPayload = 8;   // u32, payload bytes
  static constexpr size_t kReserved = 12;  // u32, written 0
};
static_assert(HeaderField::kReserved + sizeof(uint32_t) == kHeaderBytes,
              "the frame header's last field must end at kHeaderBytes");

// HELLO's payload, the same way.
struct HelloField {
  static constexpr size_t kSession = 0;                         // kSessionIdBytes
  static constexpr size_t kRank = kSessionIdBytes;              // u32
  static constexpr size_t kWorld = kRank + 4;                   // u32
  static constexpr size_t kStream = kWorld + 4;                 // u16
  static constexpr size_t kStreams = kStream + 2;               // u16
  static constexpr size_t kClientNonce = kStreams + 2;          // kNonceBytes
  static constexpr size_t kFlags = kClientNonce + kNonceBytes;  // u32
  static constexpr size_t kLiveness = kFlags + 4;               // u32, milliseconds
  static constexpr size_t kWire = kLiveness + 4;                // u32, a DataType
};
static_assert(HelloField::kWire + sizeof(uint32_t) == kHelloPayloadBytes,
              "HELLO's last field must end at kHelloPayloadBytes");

// HEARTBEAT's payload.
struct HeartbeatField {
  static constexpr size_t kEpoch = 0;      // u32
  static constexpr size_t kFlags = 4;      // u32
  static constexpr size_t kWatermark = 8;  // u64
};
static_assert(HeartbeatField::kWatermark + sizeof(uint64_t) == kHeartbeatBytes,
              "HEARTBEAT's last field must end at kHeartbeatBytes");

// Where each field of the piece header lies (byte offsets after the frame
// header, little-endian): the one table its encoder, its decoder and
// SetPieceCrc all read.
struct PieceField {
  static constexpr size_t kSeq = 0;          // u64
  static constexpr size_t kPiece = 8;        // u32
  static constexpr size_t kPieces = 12;      // u32
  static constexpr size_t kDtype = 16;       // u8
  static constexpr size_t kOp = 17;          // u8
  static constexpr size_t kFlags = 18;       // u16
  static constexpr size_t kCrc = 20;         // u32
  static constexpr size_t kTotalCount = 24;  // u64
  static constexpr size_t kOffset = 32;      // u64
  static constexpr size_t kCount = 40;       // u64
  static constexpr size_t kEpoch = 48;       // u32
  static constexpr size_t kReserved = 52;    // u32, written 0
  static constexpr size_t kWatermark = 56;   // u64
};
static_assert(PieceField::kWatermark + sizeof(uint64_t) == kPieceHeaderBytes,
              "the piece header's last field must end at kPieceHeaderBytes");

std::vector<uint8_t> Frame(FrameType type, size_t payload_bytes, uint16_t version = kProtocolVersion) {
  std::vector<uint8_t> out(kHeaderBytes + payload_bytes);
  EncodeHeader(FrameHeader{version, type, static_cast<uint32_t>(payload_bytes)}, out.data());
  return out;
}

Status SizeError(const char* what, size_t got, size_t want) {
  return Status(Code::kProtocol, std::string(what) + " payload is " + std::to_string(got) +
                                     " bytes, expected " + std::to_string(want));
}

bool KnownType(uint16_t type) {
  return type >= static_cast<uint16_t>(FrameType::kHello) && type <= static_cast<uint16_t>(FrameType::kMembership);
}

}  // namespace

const char* FrameTypeName(FrameType type) {
  switch (type) {
    case FrameType::kHello: return "HELLO";
    case FrameType::kChallenge: return "CHALLENGE";
    case FrameType::kAuth: return "AUTH";
    case FrameType::kWelcome: return "WELCOME";
    case FrameType::kReady: return "READY";
    case FrameType::kData: return "DATA";
    case FrameType::kResult: return "RESULT";
    case FrameType::kError: return "ERROR";
    case FrameType::kBye: return "BYE";
    case FrameType::kHeartbeat: return "HEARTBEAT";
    case FrameType::kMembership: return "MEMBERSHIP";
  }
  return "UNKNOWN";
}

std::string_view WireTypeName(DataType wire) {
  switch (wire) {
    case DataType::kBfloat16: return "bfloat16";
    case DataType::kFloat16: return "float16";
    default: return "off";
  }
}

std::optional<DataType> ParseWireType(std::string_view name) {
  if (name == "off") return DataType::kFloat32;
  if (name == "bfloat16" || name == "bf16") return DataType::kBfloat16;
  if (name == "float16" || name == "fp16") return DataType::kFloat16;
  return std::nullopt;
}

std::string SessionIdToString(const SessionId& id) {
  std::string out(2 * id.size(), '0');
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < id.size(); ++i) {
    out[2 * i] = kHex[id[i] >> 4];
    out[2 * i + 1] = kHex[id[i] & 15];
  }
  return out;
}

void EncodeHeader(const FrameHeader& header, uint8_t* out) {
  PutLE<uint32_t>(out + HeaderField::kMagic, kMagic);
  PutLE<uint16_t>(out + HeaderField::kVersion, header.version);
  PutLE<uint16_t>(out + HeaderField::kType, static_cast<uint16_t>(header.type));
  PutLE<uint32_t>(out + HeaderField::kPayload, header.payload_bytes);
  PutLE<uint32_t>(out + HeaderField::kReserved, 0);
}

Status DecodeHeader(std::span<const uint8_t> bytes, uint64_t max_data_payload, FrameHeader* out,
                    std::string_view self) {
  if (bytes.size() < kHeaderBytes) {
    return Status(Code::kProtocol, "truncated frame header: " + std::to_string(bytes.size()) +
                                       " of " + std::to_string(kHeaderBytes) + " bytes");
  }
  const uint32_t magic = GetLE<uint32_t>(bytes.data() + HeaderField::kMagic);
  if (magic != kMagic) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "bad magic 0x%08x (expected 0x%08x): not a reduction server peer",
                  magic, kMagic);
    return Status(Code::kProtocol, buf);
  }
  const uint16_t version = GetLE<uint16_t>(bytes.data() + HeaderField::kVersion);
  const uint16_t type = GetLE<uint16_t>(bytes.data() + HeaderField::kType);
  const uint32_t payload = GetLE<uint32_t>(bytes.data() + HeaderField::kPayload);
  out->version = version;
  out->type = static_cast<FrameType>(type);
  out->payload_bytes = payload;
  if (version != kProtocolVersion) {
    return Status(Code::kVersion, "protocol version " + std::to_string(version) +
                                      " not supported, " + std::string(self) + " speaks " +
                                      std::to_string(kProtocolVersion));
  }
  if (!KnownType(type)) {
    return Status(Code::kProtocol, "unknown frame type " + std::to_string(type));
  }
  const bool data = out->type == FrameType::kData || out->type == FrameType::kResult;
  const uint64_t limit = data ? max_data_payload : kMaxControlPayload;
  if (payload > limit) {
    return Status(Code::kProtocol, std::string(FrameTypeName(out->type)) + " frame of " +
                                       std::to_string(payload) + " bytes exceeds the limit of " +
                                       std::to_string(limit));
  }
  return Status::Ok();
}

std::vector<uint8_t> EncodeHello(const Hello& hello, uint16_t version) {
  auto out = Frame(FrameType::kHello, kHelloPayloadBytes, version);
  uint8_t* p = out.data() + kHeaderBytes;
  std::memcpy(p + HelloField::kSession, hello.session.data(), kSessionIdBytes);
  PutLE<uint32_t>(p + HelloField::kRank, hello.rank);
  PutLE<uint32_t>(p + HelloField::kWorld, hello.world);
  PutLE<uint16_t>(p + HelloField::kStream, hello.stream);
  PutLE<uint16_t>(p + HelloField::kStreams, hello.streams);
  std::memcpy(p + HelloField::kClientNonce, hello.client_nonce.data(), kNonceBytes);
  PutLE<uint32_t>(p + HelloField::kFlags, hello.flags);
  PutLE<uint32_t>(p + HelloField::kLiveness, hello.liveness_ms);
  PutLE<uint32_t>(p + HelloField::kWire, static_cast<uint32_t>(hello.wire));
  return out;
}

Status DecodeHello(std::span<const uint8_t> payload, Hello* out) {
  if (payload.size() != kHelloPayloadBytes) return SizeError("HELLO", payload.size(), kHelloPayloadBytes);
  const uint8_t* p = payload.data();
  std::memcpy(out->session.data(), p + HelloField::kSession, kSessionIdBytes);
  out->rank = GetLE<uint32_t>(p + HelloField::kRank);
  out->world = GetLE<uint32_t>(p + HelloField::kWorld);
  out->stream = GetLE<uint16_t>(p + HelloField::kStream);
  out->streams = GetLE<uint16_t>(p + HelloField::kStreams);
  std::memcpy(out->client_nonce.data(), p + HelloField::kClientNonce, kNonceBytes);
  out->flags = GetLE<uint32_t>(p + HelloField::kFlags);
  out->liveness_ms = GetLE<uint32_t>(p + HelloField::kLiveness);
  const uint32_t wire = GetLE<uint32_t>(p + HelloField::kWire);
  if (wire != static_cast<uint32_t>(DataType::kFloat32) && wire != static_cast<uint32_t>(DataType::kBfloat16) &&
      wire != static_cast<uint32_t>(DataType::kFloat16)) {
    return Status(Code::kProtocol, "unknown wire type " + std::to_string(wire) + " in HELLO");
  }
  out->wire = static_cast<DataType>(wire);
  if (out->world == 0 || out->world > kMaxWorld) {
    return Status(Code::kProtocol, "world size " + std::to_string(out->world) +
                                              " in HELLO is outside 1 to " + std::to_string(kMaxWorld));
  }
  if (out->streams > kMaxStreams) {
    return Status(Code::kProtocol, std::to_string(out->streams) + " streams per rank in HELLO; at most " +
                                              std::to_string(kMaxStreams));
  }
  if (out->rank >= out->world) {
    return Status(Code::kProtocol, "rank " + std::to_string(out->rank) +
                                              " is not below world size " + std::to_string(out->world));
  }
  if ((out->flags & ~kKnownHelloFlags) != 0) {
    return Status(Code::kProtocol, "unknown HELLO flags " + std::to_string(out->flags) +
                                              " (the worker's client library is newer than this reducer: upgrade reducerd)");
  }
  if (out->streams == 0 || out->stream >= out->streams) {
    return Status(Code::kProtocol, "stream " + std::to_string(out->stream) + " of " +
                                              std::to_string(out->streams) + " is out of range");
  }
  return Status::Ok();
}

std::vector<uint8_t> EncodeChallenge(const Challenge& challenge) {
  auto out = Frame(FrameType::kChallenge, kChallengeBytes);
  std::memcpy(out.data() + kHeaderBytes, challenge.server_nonce.data(), kNonceBytes);
  PutLE<uint32_t>(out.data() + kHeaderBytes + kNonceBytes, challenge.token_required ? 1 : 0);
  return out;
}

Status DecodeChallenge(std::span<const uint8_t> payload, Challenge* out) {
  if (payload.size() != kChallengeBytes) return SizeError("CHALLENGE", payload.size(), kChallengeBytes);
  std::memcpy(out->server_nonce.data(), payload.data(), kNonceBytes);
  out->token_required = GetLE<uint32_t>(payload.data() + kNonceBytes) != 0;
  return Status::Ok();
}

std::vector<uint8_t> EncodeAuth(const Auth& auth) {
  auto out = Frame(FrameType::kAuth, kMacBytes);
  std::memcpy(out.data() + kHeaderBytes, auth.mac.data(), kMacBytes);
  return out;
}

Status DecodeAuth(std::span<const uint8_t> payload, Auth* out) {
  if (payload.size() != kMacBytes) return SizeError("AUTH", payload.size(), kMacBytes);
  std::memcpy(out->mac.data(), payload.data(), kMacBytes);
  return Status::Ok();
}

std::vector<uint8_t> EncodeWelcome(const Welcome& welcome) {
  auto out = Frame(FrameType::kWelcome, kWelcomeBytes);
  std::memcpy(out.data() + kHeaderBytes, welcome.mac.data(), kMacBytes);
  PutLE<uint64_t>(out.data() + kHeaderBytes + kMacBytes, welcome.max_piece_bytes);
  return out;
}

Status DecodeWelcome(std::span<const uint8_t> payload, Welcome* out) {
  if (payload.size() != kWelcomeBytes) return SizeError("WELCOME", payload.size(), kWelcomeBytes);
  std::memcpy(out->mac.data(), payload.data(), kMacBytes);
  out->max_piece_bytes = GetLE<uint64_t>(payload.data() + kMacBytes);
  if (out->max_piece_bytes == 0) return Status(Code::kProtocol, "WELCOME announces a piece limit of 0 bytes");
  return Status::Ok();
}

std::vector<uint8_t> EncodeReady() { return Frame(FrameType::kReady, 0); }
std::vector<uint8_t> EncodeBye() { return Frame(FrameType::kBye, 0); }

std::vector<uint8_t> EncodeHeartbeat(const Heartbeat& heartbeat) {
  auto out = Frame(FrameType::kHeartbeat, kHeartbeatBytes);
  uint8_t* p = out.data() + kHeaderBytes;
  PutLE<uint32_t>(p + HeartbeatField::kEpoch, heartbeat.epoch);
  PutLE<uint32_t>(p + HeartbeatField::kFlags, heartbeat.flags);
  PutLE<uint64_t>(p + HeartbeatField::kWatermark, heartbeat.watermark);
  return out;
}

Status DecodeHeartbeat(std::span<const uint8_t> payload, Heartbeat* out) {
  if (payload.size() != kHeartbeatBytes) return SizeError("HEARTBEAT", payload.size(), kHeartbeatBytes);
  out->epoch = GetLE<uint32_t>(payload.data() + HeartbeatField::kEpoch);
  out->flags = GetLE<uint32_t>(payload.data() + HeartbeatField::kFlags);
  out->watermark = GetLE<uint64_t>(payload.data() + HeartbeatField::kWatermark);
  return Status::Ok();
}

std::vector<uint8_t> EncodeError(const ErrorFrame& error) {
  const size_t max_msg = kMaxControlPayload - kErrorHeadBytes;
  const size_t msg_bytes = std::min(error.message.size(), max_msg);
  auto out = Frame(FrameType::kError, kErrorHeadBytes + msg_bytes);
  PutLE<uint32_t>(out.data() + kHeaderBytes, static_cast<uint32_t>(error.code));
  std::memcpy(out.data() + kHeaderBytes + kErrorHeadBytes, error.message.data(), msg_bytes);
  return out;
}

Status DecodeError(std::span<const uint8_t> payload, ErrorFrame* out) {
  if (payload.size() < kErrorHeadBytes) return SizeError("ERROR", payload.size(), kErrorHeadBytes);
  const uint32_t code = GetLE<uint32_t>(payload.data());
  // An unknown code from a newer peer is still an error: keep its message.
  out->code = (code == 0 || code > static_cast<uint32_t>(Code::kInternal)) ? Code::kInternal
                                                                          : static_cast<Code>(code);
  out->message.assign(reinterpret_cast<const char*>(payload.data()) + kErrorHeadBytes,
                      payload.size() - kErrorHeadBytes);
  return Status::Ok();
}

void EncodePieceFrame(FrameType type, const PieceHeader& piece,
                      std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes>* out) {
  const uint64_t payload = kPieceHeaderBytes + piece.PayloadBytes();
  EncodeHeader(FrameHeader{kProtocolVersion, type, static_cast<uint32_t>(payload)}, out->data());
  uint8_t* p = out->data() + kHeaderBytes;
  PutLE<uint64_t>(p + PieceField::kSeq, piece.seq);
  PutLE<uint32_t>(p + PieceField::kPiece, piece.piece);
  PutLE<uint32_t>(p + PieceField::kPieces, piece.pieces);
  p[PieceField::kDtype] = static_cast<uint8_t>(piece.dtype);
  p[PieceField::kOp] = static_cast<uint8_t>(piece.op);
  PutLE<uint16_t>(p + PieceField::kFlags, piece.flags);
  PutLE<uint32_t>(p + PieceField::kCrc, piece.crc);
  PutLE<uint64_t>(p + PieceField::kTotalCount, piece.total_count);
  PutLE<uint64_t>(p + PieceField::kOffset, piece.offset);
  PutLE<uint64_t>(p + PieceField::kCount, piece.count);
  PutLE<uint32_t>(p + PieceField::kEpoch, piece.epoch);
  PutLE<uint32_t>(p + PieceField::kReserved, 0);
  PutLE<uint64_t>(p + PieceField::kWatermark, piece.watermark);
}

void SetPieceCrc(uint32_t crc, std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes>* frame) {
  uint8_t* p = frame->data() + kHeaderBytes;
  const uint16_t flags = GetLE<uint16_t>(p + PieceField::kFlags);
  PutLE<uint16_t>(p + PieceField::kFlags, static_cast<uint16_t>(flags | kPieceCrc));
  PutLE<uint32_t>(p + PieceField::kCrc, crc);
}

Status DecodePieceHeader(std::span<const uint8_t> bytes, uint32_t payload_bytes,
                         uint64_t max_piece_bytes, PieceHeader* out) {
  if (bytes.size() < kPieceHeaderBytes || payload_bytes < kPieceHeaderBytes) {
    return Status(Code::kProtocol, "piece frame of " + std::to_string(payload_bytes) +
                                       " bytes is shorter than its " +
                                       std::to_string(kPieceHeaderBytes) + "-byte piece header");
  }
  const uint8_t* p = bytes.data();
  out->seq = GetLE<uint64_t>(p + PieceField::kSeq);
  out->piece = GetLE<uint32_t>(p + PieceField::kPiece);
  out->pieces = GetLE<uint32_t>(p + PieceField::kPieces);
  const uint8_t dtype_byte = p[PieceField::kDtype];
  const uint8_t op_byte = p[PieceField::kOp];
  const auto dtype = DataTypeFromWire(dtype_byte);
  const auto op = ReduceOpFromWire(op_byte);
  if (!dtype) return Status(Code::kProtocol, "unknown data type " + std::to_string(dtype_byte));
  if (!op) return Status(Code::kProtocol, "unknown reduction op " + std::to_string(op_byte));
  out->dtype = *dtype;
  out->op = *op;
  out->flags = GetLE<uint16_t>(p + PieceField::kFlags);
  out->crc = GetLE<uint32_t>(p + PieceField::kCrc);
  if ((out->flags & ~kKnownPieceFlags) != 0) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "unknown piece flags 0x%04x", out->flags);
    return Status(Code::kProtocol, buf);
  }
  if ((out->flags & kPieceWideSum) != 0 &&
      (out->op != ReduceOp::kSum || (out->dtype != DataType::kFloat32 && out->dtype != DataType::kBfloat16 &&
                                     out->dtype != DataType::kFloat16))) {
    return Status(Code::kProtocol, "a piece of a float32 sum on a 16-bit wire carries " +
                                       std::string(DataTypeName(out->dtype)) + " " +
                                       std::string(ReduceOpName(out->op)));
  }
  out->total_count = GetLE<uint64_t>(p + PieceField::kTotalCount);
  out->offset = GetLE<uint64_t>(p + PieceField::kOffset);
  out->count = GetLE<uint64_t>(p + PieceField::kCount);
  out->epoch = GetLE<uint32_t>(p + PieceField::kEpoch);
  out->watermark = GetLE<uint64_t>(p + PieceField::kWatermark);
  const std::string where = "operation " + std::to_string(out->seq) + " piece " + std::to_string(out->piece);
  if (out->pieces == 0 || out->piece >= out->pieces) {
    return Status(Code::kProtocol, where + " is out of range (" + std::to_string(out->pieces) + " pieces)");
  }
  const size_t elem = DataTypeSize(out->dtype);
  if (out->count == 0 || out->count > max_piece_bytes / elem) {
    return Status(Code::kProtocol, where + " has " + std::to_string(out->count) + " " +
                                       std::string(DataTypeName(out->dtype)) +
                                       " elements; a piece holds 1 to " +
                                       std::to_string(max_piece_bytes / elem));
  }
  if (out->offset > out->total_count || out->count > out->total_count - out->offset) {
    return Status(Code::kProtocol, where + " covers elements [" + std::to_string(out->offset) + ", " +
                                       std::to_string(out->offset + out->count) +
                                       ") beyond the operation's " + std::to_string(out->total_count));
  }
  if (payload_bytes != kPieceHeaderBytes + out->count * elem) {
    return Status(Code::kProtocol, where + " frame carries " +
                                       std::to_string(payload_bytes - kPieceHeaderBytes) +
                                       " bytes, its header says " + std::to_string(out->count * elem));
  }
  return Status::Ok();
}

}  // namespace rs::protocol
