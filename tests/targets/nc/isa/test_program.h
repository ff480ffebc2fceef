// A program that uses every opcode and every operand form (all memory spaces, 0-4 free dims,
// negative strides, wide HBM strides and counts, optional operands present and absent, all five
// operand slots, immediates, DMA queues, single and multiple (up to 8) waits, increments). Every line
// is legal on nc-v2.
#pragma once

#include <string>

namespace tessel::nc::testing {

inline const std::string kEveryOpcodeProgram =
    "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=hbm[p0:1, off 4096, [512,128], [1,512]]:bf16 queue=q0 inc=s0\n"
    "dma_copy.DMA dst=sbuf[p0:128, off 1024, [1,128]]:bf16 src=hbm[p0:1, off 0, [128,128], [1,128]]:f32 queue=q15 inc=s1\n"
    "dma_copy.DMA dst=sbuf[p0:128, off 4096, [1,64]]:f32 src=hbm[p0:1, off 1000000000, [1000000,128], [-70000,2], [1,32]]:f32 "
    "queue=q3 wait=s2>=1,s4>=2 inc=s5\n"
    "dma_copy.DMA dst=hbm[p0:1, off 0, [1,128000]]:bf16 src=sbuf[p0:128, off 8192, [1,1000]]:bf16 queue=q7\n"
    "dma_copy.DMA dst=hbm[p0:1, off 4096, [64,2], [4096,2], [1,64]]:f32 src=sbuf[p0:2, off 0, [1,128]]:f32 queue=q7 "
    "dyn=dst+r0*256<=63\n"
    "nc_matmul.PE dst=psum[p0:128, off 0, [1,512]]:f32 stationary=sbuf[p0:128, off 1024, [1,128]]:bf16 "
    "moving=sbuf[p0:128, off 0, [1,512]]:bf16 wait=s0>=1 inc=s2\n"
    "nc_matmul.PE dst=psum[p0:128, off 0, [1,512]]:f32 stationary=sbuf[p0:128, off 1024, [1,128]]:bf16 "
    "moving=sbuf[p0:128, off 0, [1,512]]:bf16 acc=1 wait=s1>=1,s0>=1 inc=s2\n"
    "nc_transpose.PE dst=psum[p0:128, off 2048, [1,128]]:bf16 src=sbuf[p0:128, off 1024, [1,128]]:bf16\n"
    "nc_transpose.DVE dst=sbuf[p32:32, off 0, [1,32]]:f32 src=psum[p32:32, off 0, [1,32]]:f32\n"
    "activation.ACT dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=psum[p0:128, off 0, [1,512]]:f32 func=gelu wait=s3>=1 inc=s4\n"
    "activation.ACT dst=sbuf[p0:64, off 8, [1,256]]:f32 src=sbuf[p64:64, off 0, [2,256]]:f32 "
    "bias=sbuf[p0:64, off 4]:f32 accum=sbuf[p0:64, off 0, [1,1]]:f32 scale=sbuf[p0:64, off 2048]:f32 op0=add func=exp "
    "imm=0.125\n"
    "activation.ACT dst=sbuf[p0:128, off 0, [1,64]]:f32 src=sbuf[p0:128, off 256, [1,64]]:f32 "
    "scale=sbuf[p0:128, off 1024, [1,1]]:f32 func=sigmoid imm=2\n"
    "tensor_tensor.DVE dst=sbuf[p0:128, off 0, [64,8], [1,64]]:f32 in0=psum[p0:128, off 0, [64,8], [1,64]]:f32 "
    "in1=sbuf[p0:128, off 4096, [0,8], [1,64]]:f32 op0=multiply\n"
    "tensor_tensor.POOL dst=sbuf[p96:16, off 0, [2,4], [8,2], [1,2], [16,2]]:i32 in0=sbuf[p96:16, off 256, [-1,64]]:i32 "
    "in1=sbuf[p96:16, off 512, [32,2], [8,4], [1,8]]:i32 op0=bitwise_xor\n"
    "tensor_tensor_scan.DVE dst=sbuf[p0:128, off 0, [1,512]]:f32 in0=sbuf[p0:128, off 4096, [1,512]]:f32 "
    "in1=psum[p0:128, off 0, [1,512]]:f32 initial=sbuf[p0:128, off 8192]:f32 op0=multiply op1=add\n"
    "tensor_scalar_reduce.DVE dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=psum[p0:128, off 0, [1,512]]:f32 "
    "accum=sbuf[p0:128, off 4096]:f32 op0=power op1=add imm=2\n"
    "tensor_scalar_reduce.DVE dst=sbuf[p0:64, off 0, [4,8], [1,4]]:f32 src=sbuf[p0:64, off 256, [4,8], [1,4]]:f32 "
    "accum=psum[p0:64, off 0]:f32 scalar0=sbuf[p0:64, off 8192]:f32 op0=subtract op1=maximum\n"
    "tensor_scalar.DVE dst=sbuf[p0:128, off 0, [1,100]]:bf16 src=sbuf[p0:128, off 256, [1,100]]:bf16 "
    "op0=subtract op1=multiply imm=-1.5,3e+20\n"
    "tensor_scalar.ACT dst=sbuf[p0:128, off 0, [1,16]]:f16 src=sbuf[p0:128, off 64, [1,16]]:f16 op0=add "
    "imm=bits:0x7fc00001\n"
    "tensor_scalar.DVE dst=sbuf[p0:128, off 0, [1,100]]:f32 src=sbuf[p0:128, off 512, [1,100]]:f32 "
    "scalar0=sbuf[p0:128, off 1024, [1,1]]:f32 scalar1=sbuf[p0:128, off 1028]:f32 op0=subtract op1=multiply\n"
    "tensor_scalar.POOL dst=sbuf[p0:32, off 0, [1,8]]:i32 src=sbuf[p0:32, off 64, [1,8]]:i32 "
    "scalar1=sbuf[p0:32, off 128]:i32 op0=add op1=maximum imm=1\n"
    "tensor_reduce.DVE dst=sbuf[p0:128, off 0, [1,1]]:f32 src=psum[p0:128, off 0, [1,512]]:f32 op0=maximum\n"
    "tensor_copy.POOL dst=sbuf[p0:128, off 0, [1,32]]:u8 src=sbuf[p0:128, off 32, [1,32]]:bool "
    "wait=s0>=1,s1>=1,s2>=2,s3>=3,s4>=4,s5>=5,s6>=6,s7>=7\n"
    "tensor_copy.ACT dst=sbuf[p0:128, off 0, [1,32]]:f8e4m3 src=psum[p0:128, off 0, [1,32]]:f8e5m2\n"
    "tensor_copy.DVE dst=sbuf[p0:128, off 0, [1,8]]:f8e4m3fn src=sbuf[p0:128, off 16, [1,8]]:f8e8m0fnu\n"
    "tensor_copy.POOL dst=sbuf[p0:128, off 32768, [32767,2], [-32768,2], [1,65535]]:u8 "
    "src=sbuf[p0:128, off 131072, [0,4], [1,65535]]:u8\n"
    "memset.DVE dst=psum[p0:128, off 0, [1,512]]:f32 imm=0\n"
    "memset.POOL dst=sbuf[p0:128, off 0, [1,4]]:u16 imm=7 wait=s65535>=4294967295\n"
    "iota.POOL dst=sbuf[p0:128, off 0, [1,128]]:i16 imm=0,1,1\n"
    "affine_select.POOL dst=sbuf[p0:128, off 0, [1,128]]:u32 src=sbuf[p0:128, off 512, [1,128]]:tf32 imm=-3.4028235e+38,1,-1\n"
    "bn_stats.DVE dst=sbuf[p0:128, off 0, [1,6]]:f32 src=sbuf[p0:128, off 64, [1,512]]:f32\n"
    "bn_aggr.DVE dst=sbuf[p0:128, off 0, [1,2]]:f32 src=sbuf[p0:128, off 64, [1,12]]:f32\n"
    "dma_copy.DMA dst=hbm[p0:1, off 17179869000, [1,16]]:i8 src=hbm[p0:1, off 0, [0,16]]:i8 queue=q0\n"
    "all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:bf16 cores=2 wait=s1>=1 inc=s2\n"
    "all_reduce.SP dst=sbuf[p0:128, off 256, [1,32]]:f32 op0=add cores=1\n";

}  // namespace tessel::nc::testing
