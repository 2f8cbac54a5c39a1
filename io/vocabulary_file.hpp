// A vocabulary file: the values of a categorical column, one a line, in index order
// (shardflow-convert writes OUT.vocab.NAME.txt; `:onehot=FILE` and `:index=FILE` read one).
// Every byte string round-trips: a value's backslash, newline and carriage return are written as
// \\, \n and \r, so a value with a line break stays one line. A hand-written file of plain
// values reads as it looks; a '\r' before a line's end is dropped, as a Windows editor adds it.
// Errors: a missing file is Error(kNotFound), an escape other than \\ \n \r is
// Error(kInvalidArgument) naming the file and line; both name the config key that gave it.
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardflow::io {

std::string EscapeVocabularyValue(std::string_view value);
// Throws Error(kInvalidArgument) ("bad escape") for a backslash not followed by \, n or r.
std::string UnescapeVocabularyValue(std::string_view line);

// Writes the values, one escaped value a line. Throws Error(kIo) naming the file.
void WriteVocabularyFile(const std::string& path, const std::vector<std::string>& values);
// The values of the file at `path`; empty lines are skipped. `key` names the config key in errors.
std::vector<std::string> ReadVocabularyFile(const std::string& path, const std::string& key);

}  // namespace shardflow::io
