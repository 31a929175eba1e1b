// Fuzz target: the worker's parsing of RESULT frames, as a reducer (or
// anything that answers on its port) could send them. One all-reduce is
// partitioned over a few reducers as the client does it; RESULT piece
// headers from the input are decoded (protocol::DecodePieceHeader), checked
// against the operation (OperationImpl::ClaimResult) and, when claimed,
// read into the receive buffer the way ReducerStream::ReadResult does it:
// in the operation's type, or in the 16-bit wire type and then widened.
// Properties: a claimed part lands inside the receive buffer and inside its
// piece, right after the part before it; no element is claimed twice; the
// operation completes only once every element of every piece has come; a
// result of another epoch is drained; anything else is refused, never read.
#include <cstring>
#include <vector>

#include "client/operation.h"
#include "client/wire_codec.h"
#include "protocol/byte_io.h"
#include "protocol/partition.h"
#include "protocol/wire.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rs;
using client::OperationImpl;

constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kBfloat16, DataType::kInt8};
constexpr DataType kWires[] = {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16};

}  // namespace

// Input: the operation (count, type, wire type, reducers, largest piece),
// then RESULT frames of 1 + 4 + 64 bytes each: the reducer's index, the
// frame's payload length (or, when the first byte's top bit is set, the
// length the header implies), and the piece header.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Cursor in(data, size);
  const uint8_t shape = in.Byte();
  const uint64_t count = 1 + in.Byte() * 8u + (shape & 7);  // 1 to 2047 elements
  const DataType dtype = kTypes[(shape >> 3) % 4];
  const DataType wire_setting = kWires[(shape >> 5) % 3];
  const uint32_t reducers = 1 + in.Byte() % 4;
  const size_t max_piece = size_t{64} << (in.Byte() % 6);  // 64 B to 2 KiB
  const size_t elem = DataTypeSize(dtype);

  protocol::PartitionParams params;
  params.count = count;
  params.elem_size = elem;
  params.max_piece_bytes = max_piece;
  params.min_piece_bytes = 64;
  params.reducers = reducers;
  const uint64_t seq = 5;
  params.seq = seq;
  std::vector<protocol::PieceSpan> pieces = protocol::Partition(params);
  FUZZ_CHECK(!pieces.empty());
  std::vector<uint8_t> send(count * elem, 1);
  std::vector<uint8_t> recv(count * elem, 0);
  auto op = std::make_shared<OperationImpl>(seq, send.data(), recv.data(), count, dtype, ReduceOp::kSum, 0, pieces,
                                            reducers, Clock::now(), wire_setting);
  const bool wide = op->wire() != DataType::kFloat32;

  std::vector<uint8_t> got(count, 0);  // elements received
  size_t pieces_done = 0;
  bool failed = false;
  for (int frames = 0; frames < 64 && !failed && in.left() >= 1 + 4 + protocol::kPieceHeaderBytes; ++frames) {
    const uint8_t first = in.Byte();
    const uint32_t reducer = first % 4;
    uint32_t payload_bytes = in.U32();
    const auto bytes = in.Take(protocol::kPieceHeaderBytes);
    if (first & 0x80) {
      const auto type = DataTypeFromWire(bytes[16]);
      const uint64_t n = protocol::GetLE<uint64_t>(bytes.data() + 40);
      if (type && n < (1u << 20)) {
        payload_bytes = static_cast<uint32_t>(protocol::kPieceHeaderBytes + n * DataTypeSize(*type));
      }
    }
    protocol::PieceHeader h;
    // The reducer's WELCOME announced max_piece: larger frames never get here.
    if (!protocol::DecodePieceHeader(bytes, payload_bytes, max_piece, &h).ok()) continue;
    FUZZ_CHECK(h.PayloadBytes() <= max_piece);
    if (h.seq != seq) continue;  // FindOperation finds no such operation: drained
    bool last = false;
    Status error;
    const OperationImpl::Claim claim = op->ClaimResult(reducer, h, &last, &error);
    if (claim == OperationImpl::Claim::kError) {
      FUZZ_CHECK(!error.ok());
      failed = true;  // the stream fails; nothing is read
      continue;
    }
    if (claim == OperationImpl::Claim::kStale) {  // another epoch's: drained, never read into the buffer
      FUZZ_CHECK(h.epoch != 0);
      continue;
    }
    const protocol::PieceSpan& p = pieces.at(h.piece);
    FUZZ_CHECK(p.reducer == reducer);
    FUZZ_CHECK(h.offset >= p.offset && h.offset + h.count <= p.offset + p.count);
    for (uint64_t i = h.offset; i < h.offset + h.count; ++i) {
      FUZZ_CHECK(!got[i]);
      got[i] = 1;
    }
    // Where ReadResult reads it: the payload as it comes, then widened.
    const bool narrow = (h.flags & protocol::kPieceWideSum) != 0 && h.dtype != DataType::kFloat32;
    FUZZ_CHECK(!narrow || wide);
    uint8_t* dest = recv.data() + h.offset * elem;
    if (narrow) {
      std::vector<uint8_t> wire_part(h.PayloadBytes(), 0x3f);
      FUZZ_CHECK(h.offset * elem + h.count * sizeof(float) <= recv.size());
      client::WidenPart(h.dtype, reinterpret_cast<const uint16_t*>(wire_part.data()), reinterpret_cast<float*>(dest),
                        h.count);
    } else {
      FUZZ_CHECK(h.offset * elem + h.PayloadBytes() <= recv.size());
      std::memset(dest, 0x5a, h.PayloadBytes());
    }
    if (last) {
      for (uint64_t i = p.offset; i < p.offset + p.count; ++i) FUZZ_CHECK(got[i]);
      const bool completes = op->PieceDone(h.epoch);
      ++pieces_done;
      FUZZ_CHECK(completes == (pieces_done == pieces.size()));
    }
  }
  if (pieces_done == pieces.size()) {
    for (uint8_t g : got) FUZZ_CHECK(g);
  }
  op->Finish(Status(Code::kCancelled, "fuzz input ended"));
  return 0;
}
