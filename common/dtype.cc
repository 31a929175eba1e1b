#include "common/dtype.h"

#include <array>

namespace rs {
namespace {

struct TypeInfo {
  DataType type;
  std::string_view name;
  size_t size;
  std::array<std::string_view, 3> aliases;
};

constexpr std::array<TypeInfo, kNumDataTypes> kTypes = {{
    {DataType::kInt8, "int8", 1, {"i8", "char", ""}},
    {DataType::kUint8, "uint8", 1, {"u8", "byte", ""}},
    {DataType::kInt32, "int32", 4, {"i32", "int", ""}},
    {DataType::kUint32, "uint32", 4, {"u32", "", ""}},
    {DataType::kInt64, "int64", 8, {"i64", "long", ""}},
    {DataType::kUint64, "uint64", 8, {"u64", "", ""}},
    {DataType::kFloat16, "float16", 2, {"fp16", "f16", "half"}},
    {DataType::kFloat32, "float32", 4, {"fp32", "f32", "float"}},
    {DataType::kFloat64, "float64", 8, {"fp64", "f64", "double"}},
    {DataType::kBfloat16, "bfloat16", 2, {"bf16", "", ""}},
}};

constexpr std::array<std::string_view, kNumReduceOps> kOpNames = {"sum", "prod", "max", "min"};

}  // namespace

std::optional<DataType> DataTypeFromWire(uint32_t value) {
  if (value >= static_cast<uint32_t>(kNumDataTypes)) return std::nullopt;
  return static_cast<DataType>(value);
}

std::optional<ReduceOp> ReduceOpFromWire(uint32_t value) {
  if (value >= static_cast<uint32_t>(kNumReduceOps)) return std::nullopt;
  return static_cast<ReduceOp>(value);
}

std::optional<DataType> ParseDataType(std::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (name == info.name) return info.type;
    for (std::string_view alias : info.aliases) {
      if (!alias.empty() && name == alias) return info.type;
    }
  }
  return std::nullopt;
}

std::optional<ReduceOp> ParseReduceOp(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (name == kOpNames[i]) return static_cast<ReduceOp>(i);
  }
  return std::nullopt;
}

std::string_view DataTypeName(DataType type) { return kTypes[static_cast<size_t>(type)].name; }
std::string_view ReduceOpName(ReduceOp op) { return kOpNames[static_cast<size_t>(op)]; }
size_t DataTypeSize(DataType type) { return kTypes[static_cast<size_t>(type)].size; }

}  // namespace rs
