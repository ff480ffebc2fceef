// Parser of the text IR that printer.h writes (with large tensors in full). `tessel opt` reads
// .tsl.txt files with it, and pass tests are written in this form. Grammar (`#` comments to end of
// line; whitespace is free):
//
//   model     := 'model' 'opset' '(' [domain '=' INT {',' ...}] ')' {field} '{' func '}'
//   field     := 'ir_version' '=' INT | 'producer' '=' STR | 'producer_version' '=' STR
//              | 'domain' '=' STR | 'model_version' '=' INT | 'doc' '=' STR
//              | 'metadata' '=' '{' [STR '=' STR {',' ...}] '}'
//   func      := 'func' @name '(' [%v ':' type ['=' tensor] {',' ...}] ')'
//                '->' '(' [%v ':' type {',' ...}] ')' '{' {stmt} 'return' [%v {',' %v}] '}'
//   stmt      := 'const' %v '=' tensor [':' type]
//              | [out {',' out} '='] op '(' [in {',' in}] ')' ['{' attr {',' attr} '}']
//                ['name' '=' STR] ['domain' '=' STR] [':' (type | '_') {',' ...}]
//   out, in   := %v | '_'                       (an omitted optional output or input)
//   op        := Op | domain.Op | STR           (the last dotted part is the op type)
//   attr      := name '=' (INT | FLOAT | STR | tensor | func | 'type' '<' type '>'
//                          | '[' value {',' value} ']' | ('ints'|'floats'|...) '[' ']')
//   type      := '?' | 'seq' '<' type '>' | 'opt' '<' type '>' | dtype '[' ('*' | [dim {',' dim}]) ']'
//   dim       := INT | '?' | IDENT | STR
//   tensor    := 'dense' '<' dtype '[' [INT {',' INT}] ']' [':' element {',' element}] '>'
//   element   := INT | FLOAT | ['-'] ('inf' | 'nan') | 'nan' '(' HEX ')' | 'true' | 'false' | STR
//              | '(' real ',' imag ')'
//
// A value is visible from its definition to the end of its graph and in the subgraphs of later
// nodes; a use names the innermost visible value of that name. The elided tensor form
// (`dense<f32[64] ... hash=...>`) is rejected: it carries no data.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Parses a whole model. Errors are ParseError (or InvalidModel for names used before their
/// definition) Diagnostics whose location reads "fileName:line:col", so str() gives
/// "model.tsl.txt:3:14: expected ')' after the inputs of node 'conv1', got ','". The model's
/// sourcePath is fileName; node sourceIndex is the node's position in its graph.
Expected<Model> parseModel(std::string_view text, const std::string &fileName);
/// Reads and parses a text IR file.
Expected<Model> parseModelFile(const std::string &path);
/// Parses a type as printType writes it, e.g. "f32[batch,3]" or "seq<i64[*]>".
Expected<Type> parseType(std::string_view text);

}  // namespace tessel
