// UTF-8 helpers shared by the tokenizer and the dataset readers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace impress {

// Length of the sequence that `lead` starts (1-4), or 0 for a byte that cannot lead.
size_t Utf8Len(unsigned char lead);
// True when `s` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool ValidUtf8(std::string_view s);
// Number of code points in valid UTF-8 `s` (Python's len()).
size_t Utf8Length(std::string_view s);
std::string EncodeUtf8(uint32_t code_point);
// Replaces invalid sequences with U+FFFD, as Rust's from_utf8_lossy does.
std::string Utf8Lossy(const std::string& s);

}  // namespace impress
