// Conversions between config text and typed values.
//
// ValueCodec<T> knows one value type of the config system:
//   static std::string TypeName();                                  // "int", "bool", ...
//   static bool Parse(std::string_view text, T* out, std::string* why);
//   static std::string Render(const T& value);
// Parse returns false on malformed text and may set *why to a detail ("out of range").
// The contract that resolved.ini relies on: Parse(Render(v)) yields v exactly, for every v that
// Render accepts (doubles and floats render as the shortest text that reads back bit for bit).
//
// Supported: int, int64_t, size_t (and the other integer types), double, float, bool
// (true/false/1/0/yes/no/on/off, any case), std::string, and std::vector of any of those as a
// comma-separated list ("1, 2, 3"; empty text is the empty list).
// INI limits: a string may not contain '#' (the comment character) or a line break, and a list
// item may not contain ',' or be empty. Text is expected to be trimmed by the caller.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace shardflow {

template <typename T>
struct ValueCodec;

namespace config_detail {

std::string_view Trim(std::string_view text);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

template <typename T>
std::string IntegerTypeName() {
  if constexpr (std::is_same_v<T, int>) return "int";
  if constexpr (std::is_same_v<T, int64_t>) return "int64";
  if constexpr (std::is_same_v<T, size_t>) return "size_t";
  if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  if constexpr (std::is_same_v<T, uint64_t> && !std::is_same_v<uint64_t, size_t>) return "uint64";
  return std::is_signed_v<T> ? "integer" : "unsigned integer";
}

// std::from_chars over the whole text, allowing one leading '+'.
template <typename T>
bool ParseNumber(std::string_view text, T* out, std::string* why) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  if (text.empty()) return false;
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    if (why != nullptr) *why = "out of range";
    return false;
  }
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  *out = value;
  return true;
}

template <typename T>
std::string RenderNumber(T value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("?");
}

}  // namespace config_detail

template <typename T>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) struct ValueCodec<T> {
  static std::string TypeName() { return config_detail::IntegerTypeName<T>(); }
  static bool Parse(std::string_view text, T* out, std::string* why) {
    return config_detail::ParseNumber(text, out, why);
  }
  static std::string Render(const T& value) { return config_detail::RenderNumber(value); }
};

template <typename T>
requires std::is_floating_point_v<T>
struct ValueCodec<T> {
  static std::string TypeName() { return std::is_same_v<T, float> ? "float" : "double"; }
  // NaN and infinities are refused: no key of a run is meaningful with them, and an infinite
  // learning rate would otherwise train to NaN without a word.
  static bool Parse(std::string_view text, T* out, std::string* why) {
    T value{};
    if (!config_detail::ParseNumber(text, &value, why)) return false;
    if (!std::isfinite(value)) {
      if (why != nullptr) *why = "not a finite number";
      return false;
    }
    *out = value;
    return true;
  }
  static std::string Render(const T& value) { return config_detail::RenderNumber(value); }
};

template <>
struct ValueCodec<bool> {
  static std::string TypeName() { return "bool"; }
  static bool Parse(std::string_view text, bool* out, std::string* why);
  static std::string Render(const bool& value) { return value ? "true" : "false"; }
};

template <>
struct ValueCodec<std::string> {
  static std::string TypeName() { return "string"; }
  static bool Parse(std::string_view text, std::string* out, std::string* why);
  static std::string Render(const std::string& value) { return value; }
};

template <typename T>
struct ValueCodec<std::vector<T>> {
  static std::string TypeName() { return "comma-separated list of " + ValueCodec<T>::TypeName(); }
  static bool Parse(std::string_view text, std::vector<T>* out, std::string* why) {
    std::vector<T> items;
    text = config_detail::Trim(text);
    size_t index = 0;
    while (!text.empty()) {
      const size_t comma = text.find(',');
      const std::string_view item = config_detail::Trim(text.substr(0, comma));
      std::string item_why;
      T value{};
      if (item.empty() || !ValueCodec<T>::Parse(item, &value, &item_why)) {
        if (why != nullptr) {
          *why = "item " + std::to_string(index) + " '" + std::string(item) + "' is " +
                 (item.empty() ? std::string("empty")
                               : "not a valid " + ValueCodec<T>::TypeName() +
                                     (item_why.empty() ? "" : " (" + item_why + ")"));
        }
        return false;
      }
      items.push_back(std::move(value));
      ++index;
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
      if (config_detail::Trim(text).empty()) {  // "1, 2," has an empty last item
        if (why != nullptr) *why = "item " + std::to_string(index) + " is empty";
        return false;
      }
    }
    *out = std::move(items);
    return true;
  }
  static std::string Render(const std::vector<T>& values) {
    std::string text;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) text += ", ";
      text += ValueCodec<T>::Render(values[i]);
    }
    return text;
  }
};

// True when T is a type the config system can hold.
template <typename T>
concept ConfigValue = requires(std::string_view text, T* out, std::string* why, const T& value) {
  { ValueCodec<T>::TypeName() } -> std::convertible_to<std::string>;
  { ValueCodec<T>::Parse(text, out, why) } -> std::same_as<bool>;
  { ValueCodec<T>::Render(value) } -> std::convertible_to<std::string>;
};

}  // namespace shardflow
