// The writer rule of sim::OutputFile (sim/output_file.h), file by file.
#include "sim/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/error.h"
#include "tests/temp_path.h"

namespace bubblesim::sim {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public bubblesim::testing::TempDirTest {
 protected:
  std::string read(const std::string& name) const {
    std::ifstream in(path(name));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
  }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
};

TEST_F(OutputFileTest, NewFileAppearsOnlyAtCommit) {
  OutputFile out(path("new.txt"));
  EXPECT_FALSE(fs::exists(path("new.txt")));
  EXPECT_EQ(fs::path(out.temporary()).parent_path(), dir_);  // beside the target
  std::ofstream(out.temporary()) << "hello\n";
  out.commit();
  EXPECT_EQ(read("new.txt"), "hello\n");
  EXPECT_EQ(entries(), 1u);  // no temporary left
}

TEST_F(OutputFileTest, UncommittedOutputLeavesNothingAndKeepsTheOldFile) {
  write("old.txt", "old\n");
  {
    OutputFile out(path("old.txt"));
    EXPECT_TRUE(out.replaces_regular_file());
    std::ofstream(out.temporary()) << "new\n";
  }  // a failure before commit
  EXPECT_EQ(read("old.txt"), "old\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFileTest, ReplacedFileKeepsItsPermissions) {
  write("f.txt", "old\n");
  fs::permissions(path("f.txt"),
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  OutputFile out(path("f.txt"));
  std::ofstream(out.temporary()) << "new\n";
  out.commit();
  EXPECT_EQ(read("f.txt"), "new\n");
  EXPECT_EQ(fs::status(path("f.txt")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST_F(OutputFileTest, SymlinkTargetIsWrittenAndTheLinkStays) {
  write("target.txt", "old\n");
  fs::create_symlink("target.txt", path("link.txt"));
  OutputFile out(path("link.txt"));
  EXPECT_EQ(out.target(), path("target.txt"));
  std::ofstream(out.temporary()) << "new\n";
  out.commit();
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("link.txt"))));
  EXPECT_EQ(read("target.txt"), "new\n");
}

TEST_F(OutputFileTest, SpecialFileIsWrittenIntoNeverReplaced) {
  OutputFile out("/dev/null");
  EXPECT_TRUE(out.writes_into_special_file());
  EXPECT_NE(fs::path(out.temporary()).parent_path(), fs::path("/dev"));
  std::ofstream(out.temporary()) << "discarded\n";
  const std::string temporary = out.temporary();
  out.commit();
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_FALSE(fs::exists(temporary));
}

TEST_F(OutputFileTest, DirectoriesReadOnlyFilesAndMissingFoldersAreRefused) {
  fs::create_directory(path("dir"));
  write("ro.txt", "keep\n");
  fs::permissions(path("ro.txt"), fs::perms::owner_read);
  const auto refused = [&](const std::string& target, const std::string& why) {
    try {
      OutputFile out(target);
      ADD_FAILURE() << target << ": expected an Error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), target + ": " + why);
    }
  };
  refused(path("dir"), "is a directory, not a regular file");
  refused(path("ro.txt"), "the file is read-only; refusing to replace it");
  refused(path("missing/x.txt"), "its folder " + path("missing") + " does not exist");
  EXPECT_EQ(read("ro.txt"), "keep\n");
  EXPECT_EQ(entries(), 2u);
}

TEST_F(OutputFileTest, TwoOutputsOnOneFileAreRefused) {
  fs::create_symlink("a.txt", path("b.txt"));
  const OutputFile a(path("a.txt")), b(path("b.txt")), c(path("c.txt"));
  EXPECT_THROW(check_distinct_outputs(a, "--x", b, "--y"), InvalidArgument);
  EXPECT_NO_THROW(check_distinct_outputs(a, "--x", c, "--y"));
}

}  // namespace
}  // namespace bubblesim::sim
