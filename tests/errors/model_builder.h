// Helpers for error tests: small ONNX models built directly as protobufs and written to a
// temporary folder, so each test states exactly which defect it feeds the importer.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <onnx/onnx_pb.h>

namespace tessel::testing {

/// A fresh, empty folder under the system temp dir, unique per test.
inline std::filesystem::path makeTempDir(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() / ("tessel-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void writeBytes(const std::filesystem::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string readBytes(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A model with opset `opset` and one f32 input "x" of shape `dims` and output "y".
inline onnx::ModelProto makeModel(int64_t opset = 13, std::initializer_list<int64_t> dims = {2, 3}) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto *op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto *graph = model.mutable_graph();
  graph->set_name("g");
  auto addInfo = [&](onnx::ValueInfoProto *info, const char *name) {
    info->set_name(name);
    auto *t = info->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  addInfo(graph->add_input(), "x");
  addInfo(graph->add_output(), "y");
  return model;
}

inline onnx::NodeProto *addNode(onnx::ModelProto &model, const std::string &op, std::initializer_list<const char *> inputs,
                                std::initializer_list<const char *> outputs, const std::string &name) {
  auto *node = model.mutable_graph()->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const char *i : inputs) node->add_input(i);
  for (const char *o : outputs) node->add_output(o);
  return node;
}

}  // namespace tessel::testing
