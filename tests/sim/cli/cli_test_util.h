// Helpers shared by the command-line tests: run the CLI in-process and read its JSON.
#pragma once

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.h"

namespace bubblesim::cli::testing {

struct Outcome {
  int status;
  std::string out;
  std::string err;
};

inline Outcome run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = run(args, out, err);
  return {status, out.str(), err.str()};
}

inline rapidjson::Document parse_json(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

}  // namespace bubblesim::cli::testing
