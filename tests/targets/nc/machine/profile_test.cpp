// Machine profiles: the bundled nc-v2 / nc-v3 profiles hold the numbers of accelerator-model.md
// section 10 (and the section 4, 5, 9 parameters it references), a user's edited copy loads from a
// path, and bad profiles give diagnostics that name the file and the key path.
#include "targets/nc/machine/profile.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tessel::nc {
namespace {

std::string readSourceProfile(const std::string &name) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/src/targets/nc/machine/profiles/" + name + ".json");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Replaces the one occurrence of `from` in `text`; fails the test when it is not there exactly once.
std::string replaceOnce(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// Writes `text` to a fresh file in the test temp folder and returns its path.
std::string writeTempProfile(const std::string &fileName, const std::string &text) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "tessel_nc_machine_tests";
  std::filesystem::create_directories(dir);
  std::filesystem::path path = dir / fileName;
  std::ofstream(path) << text;
  return path.string();
}

TEST(MachineProfile, BundlesBothGenerations) {
  EXPECT_EQ(bundledProfileNames(), (std::vector<std::string>{"nc-v2", "nc-v3"}));
}

TEST(MachineProfile, NcV2HoldsSection10Values) {
  Expected<MachineProfile> loaded = loadProfile("nc-v2");
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();
  const MachineProfile &p = *loaded;
  EXPECT_EQ(p.name, "nc-v2");
  EXPECT_EQ(p.sourceFile, "<bundled nc-v2.json>");
  EXPECT_EQ(p.chip.coresPerChip, 2);
  EXPECT_EQ(p.partitions, 128);
  EXPECT_EQ(p.sbuf.bytesPerPartition, 196608);
  EXPECT_EQ(p.sbuf.accessOverheadCycles, 60);
  EXPECT_EQ(p.psum.bytesPerPartition, 16384);
  EXPECT_EQ(p.psum.banks, 8);
  EXPECT_EQ(p.psum.bankFp32Elements, 512);
  EXPECT_EQ(p.hbm.bytesPerCore, 17179869184);
  EXPECT_DOUBLE_EQ(p.hbm.bytesPerNsPerCore, 410);
  EXPECT_DOUBLE_EQ(p.pe.clockGHz, 2.8);
  EXPECT_DOUBLE_EQ(p.dve.clockGHz, 1.12);
  EXPECT_DOUBLE_EQ(p.act.clockGHz, 1.4);
  EXPECT_DOUBLE_EQ(p.pool.clockGHz, 1.4);
  EXPECT_DOUBLE_EQ(p.sp.clockGHz, 1.4);
  EXPECT_EQ(p.pe.mmMinIiCycles, 64);
  EXPECT_EQ(p.pe.fp32Factor, 4);
  EXPECT_EQ(p.pe.tileSizes, (std::vector<int64_t>{128, 64}));
  EXPECT_FALSE(p.pe.fp8DoubleRow);
  EXPECT_EQ(p.pe.pipeLatencyCycles, 192);
  EXPECT_EQ(p.dve.smallDependencyOverheadCycles, 100);
  EXPECT_EQ(p.act.pipeLatencyCycles, 150);
  EXPECT_EQ(p.act.reduceOps, (std::vector<std::string>{"add"}));
  EXPECT_EQ(p.pool.startCycles, 150);
  EXPECT_FALSE(p.pool.integratedDmaBytesPerNs.has_value());
  ASSERT_EQ(p.portConflicts.size(), 2u);
  EXPECT_EQ(p.portConflicts[0].first, "dve");
  EXPECT_EQ(p.portConflicts[0].second, "pool");
  EXPECT_EQ(p.portConflicts[0].resource, "sbuf");
  EXPECT_EQ(p.dma.enginesPerCore, 16);
  EXPECT_DOUBLE_EQ(p.dma.bytesPerNsPerEngine, 17);
  EXPECT_DOUBLE_EQ(p.dma.peakBytesPerNsPerEngine, 27.2);
  EXPECT_DOUBLE_EQ(p.dma.triggerNs, 1300);
  EXPECT_DOUBLE_EQ(p.dma.chunkMinNs, 38);
  ASSERT_EQ(p.dma.chunkEfficiency.size(), 4u);
  EXPECT_EQ(p.dma.chunkEfficiency.front().bytes, 256);
  EXPECT_DOUBLE_EQ(p.dma.chunkEfficiency.front().efficiency, 0.4);
  EXPECT_EQ(p.dma.chunkEfficiency.back().bytes, 4096);
  EXPECT_DOUBLE_EQ(p.dma.chunkEfficiency.back().efficiency, 1.0);
  EXPECT_DOUBLE_EQ(p.dma.transferFixedNs, 0);
  EXPECT_DOUBLE_EQ(p.dma.loadTranspose2dEfficiency.value_or(0), 0.25);
  EXPECT_FALSE(p.dma.hwDge.has_value());
  EXPECT_FALSE(p.dma.transpose.has_value());
  EXPECT_EQ(p.semLatencyCycles, 50);
  EXPECT_DOUBLE_EQ(p.collective.bytesPerNs, 96);
  EXPECT_DOUBLE_EQ(p.collective.latencyNs, 2000);
  EXPECT_FALSE(p.throttle.has_value());
  EXPECT_FALSE(p.lnc.has_value());
}

TEST(MachineProfile, NcV3HoldsSection10Values) {
  Expected<MachineProfile> loaded = loadProfile("nc-v3");
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();
  const MachineProfile &p = *loaded;
  EXPECT_EQ(p.name, "nc-v3");
  EXPECT_EQ(p.chip.coresPerChip, 8);
  EXPECT_EQ(p.sbuf.bytesPerPartition, 229376);
  EXPECT_EQ(p.hbm.bytesPerCore, 12884901888);
  EXPECT_DOUBLE_EQ(p.hbm.bytesPerNsPerCore, 362);
  EXPECT_DOUBLE_EQ(p.pe.clockGHz, 2.4);
  EXPECT_DOUBLE_EQ(p.dve.clockGHz, 0.96);
  EXPECT_DOUBLE_EQ(p.act.clockGHz, 1.2);
  EXPECT_EQ(p.pe.tileSizes, (std::vector<int64_t>{128, 64, 32}));
  EXPECT_TRUE(p.pe.fp8DoubleRow);
  EXPECT_TRUE(p.pe.transposeMode);
  EXPECT_EQ(p.pe.transposeFp32Speedup, 2);
  EXPECT_DOUBLE_EQ(p.dve.perfModeSpeedup.copyOrTensorScalarBf16SbufContiguous, 4);
  EXPECT_DOUBLE_EQ(p.dve.perfModeSpeedup.copyOrTensorScalarBf16Other, 2);
  EXPECT_DOUBLE_EQ(p.dve.perfModeSpeedup.tensorTensorBf16Sbuf, 2);
  EXPECT_TRUE(p.act.biasImmediate);
  EXPECT_EQ(p.act.reduceOps, (std::vector<std::string>{"add", "max", "min", "mul"}));
  EXPECT_DOUBLE_EQ(p.pool.integratedDmaBytesPerNs.value_or(0), 307);
  EXPECT_EQ(p.portConflicts[1].resource, "same_psum_bank");
  EXPECT_DOUBLE_EQ(p.dma.bytesPerNsPerEngine, 23);
  ASSERT_TRUE(p.dma.hwDge.has_value());
  EXPECT_EQ(p.dma.hwDge->instances, 2);
  EXPECT_DOUBLE_EQ(p.dma.hwDge->issueNs, 600);
  EXPECT_EQ(p.dma.hwDge->issuers, (std::vector<std::string>{"sp", "act"}));
  ASSERT_TRUE(p.dma.transpose.has_value());
  EXPECT_DOUBLE_EQ(p.dma.transpose->hbmToSbufEfficiency, 0.9);
  EXPECT_DOUBLE_EQ(p.dma.transpose->sbufToSbufEfficiency, 0.5);
  EXPECT_EQ(p.dma.transpose->dtypeBytes, (std::vector<int64_t>{2, 4}));
  ASSERT_TRUE(p.throttle.has_value());
  EXPECT_DOUBLE_EQ(p.throttle->startUtilization, 0.5);
  EXPECT_DOUBLE_EQ(p.throttle->rampUs, 3);
  ASSERT_TRUE(p.lnc.has_value());
  EXPECT_EQ(p.lnc->coresPerLogical, 2);
}

TEST(MachineProfile, SourceFileAndBundledCopyAgree) {
  // The embedded text is the file in the tree, so a path load gives the same numbers.
  Expected<MachineProfile> fromPath = loadProfile(writeTempProfile("copy.json", readSourceProfile("nc-v3")));
  ASSERT_TRUE(fromPath.ok()) << fromPath.diag().str();
  EXPECT_EQ(fromPath->sbuf.bytesPerPartition, 229376);
  EXPECT_TRUE(fromPath->sourceFile.ends_with("copy.json"));
}

TEST(MachineProfile, EditedCopyLoadsFromPath) {
  std::string text = replaceOnce(readSourceProfile("nc-v2"), "\"clockGHz\": 2.8", "\"clockGHz\": 3.5");
  Expected<MachineProfile> loaded = loadProfile(writeTempProfile("faster.json", text));
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();
  EXPECT_DOUBLE_EQ(loaded->pe.clockGHz, 3.5);
}

TEST(MachineProfileErrors, NonPositiveRateNamesFileAndKeyPath) {
  std::string path = writeTempProfile("my.json", replaceOnce(readSourceProfile("nc-v2"), "\"clockGHz\": 2.8", "\"clockGHz\": 0"));
  Expected<MachineProfile> loaded = loadProfile(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.diag().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(loaded.diag().str(), path + ": pe.clockGHz must be positive; got 0");
}

TEST(MachineProfileErrors, CollectiveFiguresMustBePositive) {
  Expected<MachineProfile> v3 = loadProfile("nc-v3");
  ASSERT_TRUE(v3.ok()) << v3.diag().str();
  EXPECT_DOUBLE_EQ(v3->collective.bytesPerNs, 192);
  EXPECT_DOUBLE_EQ(v3->collective.latencyNs, 1500);
  std::string text = replaceOnce(readSourceProfile("nc-v3"), "\"latencyNs\": 1500", "\"latencyNs\": 0");
  Expected<MachineProfile> loaded = parseProfile(text, "v3-edit.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.diag().str(), "v3-edit.json: collective.latencyNs must be positive; got 0");
  text = replaceOnce(readSourceProfile("nc-v2"), "\"bytesPerNs\": 96,", "");
  loaded = parseProfile(text, "v2-edit.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.diag().str(), "v2-edit.json: collective.bytesPerNs is missing; expected a number");
}

TEST(MachineProfileErrors, MissingKey) {
  std::string text = replaceOnce(readSourceProfile("nc-v3"), "\"bytesPerNsPerEngine\": 23,", "");
  Expected<MachineProfile> loaded = parseProfile(text, "v3-edit.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.diag().str(), "v3-edit.json: dma.bytesPerNsPerEngine is missing; expected a number");
}

TEST(MachineProfileErrors, MissingOptionalGroupIsStillMissing) {
  // Optional groups are written as null; leaving the key out is reported, so a typo cannot hide.
  std::string text = replaceOnce(readSourceProfile("nc-v2"), "\"throttle\": null,", "");
  Expected<MachineProfile> loaded = parseProfile(text, "v2.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.diag().str(), "v2.json: throttle is missing; expected an object or null");
}

TEST(MachineProfileErrors, WrongTypes) {
  std::string base = readSourceProfile("nc-v2");
  Expected<MachineProfile> asString = parseProfile(replaceOnce(base, "\"cores\": 8", "\"cores\": \"eight\""), "a.json");
  ASSERT_FALSE(asString.ok());
  EXPECT_EQ(asString.diag().str(), "a.json: pool.cores must be an integer; got \"eight\"");

  Expected<MachineProfile> fractional = parseProfile(replaceOnce(base, "\"banks\": 8", "\"banks\": 8.5"), "b.json");
  ASSERT_FALSE(fractional.ok());
  EXPECT_EQ(fractional.diag().str(), "b.json: psum.banks must be an integer; got 8.5");

  Expected<MachineProfile> badList = parseProfile(replaceOnce(base, "[128, 64]", "[128, -64]"), "c.json");
  ASSERT_FALSE(badList.ok());
  EXPECT_EQ(badList.diag().str(), "c.json: pe.tileSizes[1] must be positive; got -64");

  Expected<MachineProfile> badEfficiency =
      parseProfile(replaceOnce(base, "\"loadTranspose2dEfficiency\": 0.25", "\"loadTranspose2dEfficiency\": 1.5"), "d.json");
  ASSERT_FALSE(badEfficiency.ok());
  EXPECT_EQ(badEfficiency.diag().str(), "d.json: dma.loadTranspose2dEfficiency must be in (0, 1]; got 1.5");

  Expected<MachineProfile> negativeSize =
      parseProfile(replaceOnce(base, "\"bytesPerPartition\": 196608", "\"bytesPerPartition\": -1"), "e.json");
  ASSERT_FALSE(negativeSize.ok());
  EXPECT_EQ(negativeSize.diag().str(), "e.json: sbuf.bytesPerPartition must be positive; got -1");
}

// Every number of a bundled profile has a source: each section's "sources" names every key of the
// section with a tag, P: (published), D: (derived) or A: (assumption, with the reason), and names no
// key the section does not have.
TEST(MachineProfile, EveryNumberHasASource) {
  for (const std::string &name : bundledProfileNames()) {
    nlohmann::json root = nlohmann::json::parse(readSourceProfile(name));
    auto check = [&](const nlohmann::json &section, const std::string &path) {
      ASSERT_TRUE(section.contains("sources")) << name << ": " << path << " has no sources";
      const nlohmann::json &sources = section["sources"];
      for (const auto &[key, value] : section.items()) {
        if (key == "source" || key == "sources" || key == "name" || key == "description" || value.is_object()) continue;
        ASSERT_TRUE(sources.contains(key)) << name << ": " << path << key << " has no source";
        const std::string text = sources[key].get<std::string>();
        EXPECT_TRUE(text.find("P:") != std::string::npos || text.find("D:") != std::string::npos ||
                    text.find("A:") != std::string::npos || text.find("null:") == 0)
            << name << ": " << path << key << ": '" << text << "' has no P:/D:/A: tag";
      }
      for (const auto &[key, value] : sources.items())
        EXPECT_TRUE(section.contains(key)) << name << ": " << path << "sources names " << key << ", not in the section";
    };
    check(root, "");
    for (const auto &[key, value] : root.items())
      if (value.is_object() && key != "sources") check(value, key + ".");
  }
}

TEST(MachineProfileErrors, NotJson) {
  Expected<MachineProfile> loaded = parseProfile("{\"name\": ", "broken.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.diag().code, ErrorCode::ParseError);
  EXPECT_EQ(loaded.diag().loc.file, "broken.json");

  Expected<MachineProfile> array = parseProfile("[1, 2]", "array.json");
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.diag().str(), "array.json: a machine profile must be a JSON object; got array");
}

TEST(MachineProfileErrors, UnknownNameAndMissingFile) {
  Expected<MachineProfile> unknown = loadProfile("nc-v9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.diag().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(unknown.diag().str(),
            "unknown machine profile 'nc-v9'; expected one of nc-v2, nc-v3 or the path of a .json profile");

  Expected<MachineProfile> missing = loadProfile("/nonexistent/dir/profile.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.diag().code, ErrorCode::FileNotFound);
  EXPECT_EQ(missing.diag().str(), "/nonexistent/dir/profile.json: machine profile file not found");
}

}  // namespace
}  // namespace tessel::nc
