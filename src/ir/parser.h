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
//                ['name' '=' STR] [':' (type | '_') {',' ...}]
//   out, in   := %v | '_'                       (an omitted optional output or input)
//   op        := Op | domain.Op | STR | STR ':' STR   (the last dotted part, or the second string,
//                                                      is the op type)
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

/// Parses a whole model. Errors are ParseError Diagnostics whose location reads
/// "fileName:line:col", so str() gives e.g. "model.tsl.txt:3:13: use of undefined value '%z'".
/// The model's sourcePath is fileName; a node's sourceIndex is its position in its graph. The
/// result is not verified beyond what parsing needs (names resolve); run verifyModel for the rest.
Expected<Model> parseModel(std::string_view text, const std::string &fileName);
/// Reads and parses a text IR file.
Expected<Model> parseModelFile(const std::string &path);
/// Parses a type as printType writes it, e.g. "f32[batch,3]" or "seq<i64[*]>".
Expected<Type> parseType(std::string_view text);

}  // namespace tessel
