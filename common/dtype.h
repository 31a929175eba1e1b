// Data types and reduction operations the reducer understands, with their
// wire values, names and element sizes. The numeric values are part of the
// wire protocol and deliberately equal NCCL's enums, so the plugin's ABI layer
// maps them one to one (the plugin still checks each value explicitly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rs {

enum class DataType : uint8_t {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
};
inline constexpr int kNumDataTypes = 10;

enum class ReduceOp : uint8_t {
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
};
inline constexpr int kNumReduceOps = 4;

// Validates a value read from the network or from a caller.
std::optional<DataType> DataTypeFromWire(uint32_t value);
std::optional<ReduceOp> ReduceOpFromWire(uint32_t value);

// Parses "float32", "fp32", "f32", "bfloat16", "bf16", ... (as in the CLI flags).
std::optional<DataType> ParseDataType(std::string_view name);
std::optional<ReduceOp> ParseReduceOp(std::string_view name);

std::string_view DataTypeName(DataType type);
std::string_view ReduceOpName(ReduceOp op);
size_t DataTypeSize(DataType type);

}  // namespace rs
