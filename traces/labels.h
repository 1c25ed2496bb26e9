// Labels of profiler ranges: which ranges of a trace are pipeline passes, and of which stage,
// microbatch and chunk.
//
// Two labellers (chosen by the `import` command's --label-regex):
// - PyTorch's pipelining runtime (torch.distributed.pipelining) names each action's range
//   "PP:<stage><action><microbatch>", e.g. "PP:0F3", "PP:2I1". Its letters are PyTorch's:
//   F forward, I input gradient (bubblesim's B), W weight gradient, B full backward
//   (bubblesim's BW). Other actions (SEND_F, UNSHARD...) are not passes.
// - A regular expression (ECMAScript, std::regex) that must match the whole range name, with
//   named groups: `pass` (required), and optionally `stage`, `microbatch`, `chunk` (decimal
//   numbers). Other named groups are allowed and ignored. The `pass` text uses bubblesim's
//   names: F, B (input gradient; I is accepted too), W, BW, or the words forward (F) and
//   backward (BW). std::regex has no named groups:
//   each "(?<name>" is rewritten to a plain "(" and the name remembered with the number of
//   that capturing group (counting unescaped "(" not followed by "?", outside [...]).
#pragma once

#include <boost/regex.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/error.h"
#include "sim/op.h"

namespace bubblesim::traces {

inline constexpr std::int32_t kNoNumber = -1;
// The largest stage, microbatch or chunk number a label may carry.
inline constexpr std::int32_t kMaxLabelNumber = 1 << 30;

struct RangeLabel {
  sim::OpKind pass = sim::OpKind::F;
  std::int32_t stage = kNoNumber;  // kNoNumber when the label carries none
  std::int32_t microbatch = kNoNumber;
  std::int32_t chunk = kNoNumber;

  friend bool operator==(const RangeLabel&, const RangeLabel&) = default;
};

class RangeLabeller {
 public:
  virtual ~RangeLabeller() = default;
  // The label of a range called `name`, or nothing when the range is not a pipeline pass.
  virtual std::optional<RangeLabel> label(std::string_view name) const = 0;
};

// "PP:<stage><F|I|W|B><microbatch>", alone or followed by ", " and anything (the fields that
// PyTorch's emit_nvtx appends: "PP:0F0, op_id = 114").
class PipeliningLabeller final : public RangeLabeller {
 public:
  std::optional<RangeLabel> label(std::string_view name) const override;
};

// A --label-regex. The constructor throws InvalidArgument for a pattern that is not a valid
// regular expression or has no `pass` group; label() returns nothing for a name the pattern
// does not match, and throws InvalidArgument when a match's `pass` is not F, B, I, W or BW or
// a number group holds something other than digits.
class RegexLabeller final : public RangeLabeller {
 public:
  explicit RegexLabeller(const std::string& pattern);
  std::optional<RangeLabel> label(std::string_view name) const override;

 private:
  boost::regex regex_;
  int pass_group_ = 0;  // capturing-group numbers; 0: the pattern has no such group
  int stage_group_ = 0;
  int microbatch_group_ = 0;
  int chunk_group_ = 0;
};

// Maps bubblesim's pass names ("F", "B", "W", "BW"; "I" for B; the words "forward" for F and
// "backward" for BW, lower case or capitalised) to the kind.
std::optional<sim::OpKind> pass_of(std::string_view text);

}  // namespace bubblesim::traces
