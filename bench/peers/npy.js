// Reads and writes NumPy .npy files (format versions 1-3, little-endian, C order) as
// onnxruntime-node tensors' raw data: { dtype, shape, data } with data a typed array.
'use strict';

const fs = require('fs');

// numpy descr -> [ONNX Runtime tensor type, typed array]
const DTYPES = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array],
  '<u8': ['uint64', BigUint64Array],
  '<i4': ['int32', Int32Array],
  '<u4': ['uint32', Uint32Array],
  '<i2': ['int16', Int16Array],
  '<u2': ['uint16', Uint16Array],
  '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array],
  '|b1': ['bool', Uint8Array],
};

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.length < 10 || buf[0] !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(`${path}: not a .npy file`);
  }
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', headerStart, headerStart + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${path}: cannot parse header ${header}`);
  if (fortran[1] === 'True') throw new Error(`${path}: Fortran order is not supported`);
  const entry = DTYPES[descr[1]];
  if (!entry) throw new Error(`${path}: dtype ${descr[1]} is not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const [dtype, Typed] = entry;
  const dataStart = headerStart + headerLen;
  // Copy into an aligned buffer: the data offset need not be a multiple of the element size.
  const bytes = new Uint8Array(count * Typed.BYTES_PER_ELEMENT);
  bytes.set(buf.subarray(dataStart, dataStart + bytes.length));
  if (buf.length - dataStart < bytes.length) throw new Error(`${path}: truncated data`);
  let data = new Typed(bytes.buffer);
  if (dtype === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  return { dtype, shape: dims, data };
}

function writeNpy(path, dtype, shape, data) {
  const descr = Object.keys(DTYPES).find((k) => DTYPES[k][0] === dtype);
  if (!descr) throw new Error(`cannot write ${dtype} as .npy`);
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  // Version 1: magic(6) + version(2) + length(2) + header padded with spaces to 64 bytes, '\n' last.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const prefix = Buffer.alloc(10);
  prefix[0] = 0x93;
  prefix.write('NUMPY', 1, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([prefix, Buffer.from(header, 'latin1'), body]));
}

module.exports = { readNpy, writeNpy };
