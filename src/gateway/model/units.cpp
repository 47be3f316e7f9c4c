#include "gateway/model/units.h"

#include <array>
#include <cstdint>
#include <optional>

namespace idem {
namespace {

// "123" or "123.45", split at the point. Digits only: no sign, exponent or space.
struct Decimal {
  std::string_view whole;
  std::string_view fraction;  // empty when there is no point
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads the number at the front of `text` and leaves the rest (the unit) there.
std::optional<Decimal> take_decimal(std::string_view& text) {
  std::size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i == 0) return std::nullopt;
  Decimal d{text.substr(0, i), {}};
  if (i < text.size() && text[i] == '.') {
    std::size_t start = ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
    if (i == start) return std::nullopt;  // "1." is not a number
    d.fraction = text.substr(start, i - start);
  }
  text.remove_prefix(i);
  return d;
}

// floor(0.fraction × scale), and whether the remainder is at least one half — exactly,
// however many digits the fraction has, by multiplying the digit string by `scale`.
struct Scaled {
  std::uint64_t floor;
  bool half_or_more;
};
Scaled scale_fraction(std::string_view fraction, std::uint64_t scale) {
  std::uint64_t carry = 0;
  unsigned first_digit = 0;  // the first digit after the point of the product
  for (std::size_t i = fraction.size(); i-- > 0;) {
    std::uint64_t t = static_cast<std::uint64_t>(fraction[i] - '0') * scale + carry;
    first_digit = static_cast<unsigned>(t % 10);
    carry = t / 10;
  }
  return {carry, first_digit >= 5};
}

// whole × scale + floor or round(0.fraction × scale), or nothing on overflow of `max`.
std::optional<std::uint64_t> scale_decimal(const Decimal& d, std::uint64_t scale, bool round,
                                           std::uint64_t max) {
  std::uint64_t whole = 0;
  for (char c : d.whole) {
    if (__builtin_mul_overflow(whole, 10u, &whole) ||
        __builtin_add_overflow(whole, static_cast<unsigned>(c - '0'), &whole)) {
      return std::nullopt;
    }
  }
  Scaled frac = scale_fraction(d.fraction, scale);
  std::uint64_t total = 0;
  if (__builtin_mul_overflow(whole, scale, &total) || __builtin_add_overflow(total, frac.floor, &total) ||
      (round && frac.half_or_more && __builtin_add_overflow(total, 1u, &total)) || total > max) {
    return std::nullopt;
  }
  return total;
}

struct Unit {
  std::string_view name;
  std::uint64_t scale;
};

constexpr std::array<Unit, 5> kDurationUnits{{
    {"d", 86'400'000'000},
    {"h", 3'600'000'000},
    {"m", 60'000'000},
    {"s", 1'000'000},
    {"ms", 1'000},
}};

// KB, MB and GB are binary too, as nginx and Spring read them: 1MB is 1MiB.
constexpr std::array<Unit, 7> kSizeUnits{{{"B", 1},
                                          {"KiB", 1024},
                                          {"KB", 1024},
                                          {"MiB", 1024 * 1024},
                                          {"MB", 1024 * 1024},
                                          {"GiB", 1024 * 1024 * 1024},
                                          {"GB", 1024 * 1024 * 1024}}};
constexpr std::string_view kSizeUnitNames = "B, KiB/KB, MiB/MB or GiB/GB";

template <std::size_t N>
const Unit* find_unit(const std::array<Unit, N>& units, std::string_view name) {
  for (const Unit& u : units) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

Status bad(std::string_view what, std::string_view text, std::string_view why) {
  return invalid_argument(std::string(what) + " \"" + std::string(text) + "\": " + std::string(why));
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  if (text == "0") return Duration::zero();
  if (text.empty()) return invalid_argument("duration is empty");
  if (text.front() == '-') return bad("duration", text, "must not be negative");
  std::string_view rest = text;
  std::optional<Decimal> number = take_decimal(rest);
  if (!number) return bad("duration", text, "expected a number such as 1.5 followed by ms, s, m, h or d");
  if (rest.empty()) return bad("duration", text, "no unit (use ms, s, m, h or d)");
  const Unit* unit = find_unit(kDurationUnits, rest);
  if (unit == nullptr) return bad("duration", text, "unknown unit (use ms, s, m, h or d)");
  constexpr auto kMax = static_cast<std::uint64_t>(kMaxDuration.count());
  std::optional<std::uint64_t> us = scale_decimal(*number, unit->scale, /*round=*/true, kMax);
  if (!us) return bad("duration", text, "at most 3650d");
  return Duration(static_cast<Duration::rep>(*us));
}

Result<std::uint64_t> parse_size(std::string_view text) {
  if (text.empty()) return invalid_argument("size is empty");
  if (text.front() == '-') return bad("size", text, "must not be negative");
  std::string_view rest = text;
  std::optional<Decimal> number = take_decimal(rest);
  if (!number) return bad("size", text, "expected a number followed by " + std::string(kSizeUnitNames));
  const Unit* unit = rest.empty() ? &kSizeUnits[0] : find_unit(kSizeUnits, rest);
  if (unit == nullptr) return bad("size", text, "unknown unit (use " + std::string(kSizeUnitNames) + ")");
  if (rest.empty() && !number->fraction.empty()) {
    return bad("size", text, "a number of bytes must be whole (or give a unit: B, KiB, MiB, GiB)");
  }
  std::optional<std::uint64_t> bytes = scale_decimal(*number, unit->scale, /*round=*/false, kMaxSize);
  if (!bytes) return bad("size", text, "at most 1GiB");
  return *bytes;
}

std::string format_duration(Duration d) {
  if (d == Duration::zero()) return "0";
  // The magnitude as unsigned, so that the most negative duration has one too.
  auto count = static_cast<std::uint64_t>(d.count());
  std::string sign;
  if (d.count() < 0) {
    sign = "-";
    count = ~count + 1;
  }
  for (const Unit& u : kDurationUnits) {
    if (count % u.scale == 0) return sign + std::to_string(count / u.scale) + std::string(u.name);
  }
  return sign + std::to_string(count) + "us";  // not accepted by parse_duration
}

std::int64_t retry_after_seconds(Duration d) noexcept {
  constexpr Duration::rep kSecond = 1'000'000;
  if (d.count() <= kSecond) return 1;
  return d.count() / kSecond + (d.count() % kSecond != 0 ? 1 : 0);
}

}  // namespace idem
