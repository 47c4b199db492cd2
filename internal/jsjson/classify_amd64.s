#include "textflag.h"

// Each constant is one byte repeated across a 32-byte vector.
#define SPLAT(name, v) \
	DATA name<>+0(SB)/8, $v; \
	DATA name<>+8(SB)/8, $v; \
	DATA name<>+16(SB)/8, $v; \
	DATA name<>+24(SB)/8, $v; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

SPLAT(quote, 0x2222222222222222)
SPLAT(bslash, 0x5c5c5c5c5c5c5c5c)
SPLAT(space, 0x2020202020202020)
SPLAT(tab, 0x0909090909090909)
SPLAT(lf, 0x0a0a0a0a0a0a0a0a)
SPLAT(cr, 0x0d0d0d0d0d0d0d0d)
SPLAT(lbrace, 0x7b7b7b7b7b7b7b7b)
SPLAT(rbrace, 0x7d7d7d7d7d7d7d7d)
SPLAT(colon, 0x3a3a3a3a3a3a3a3a)
SPLAT(comma, 0x2c2c2c2c2c2c2c2c)
SPLAT(ctlmax, 0x1f1f1f1f1f1f1f1f)

// CLASSIFY sets, for the 32 bytes in Y, one bit a byte in each of QR
// ('"'), BR ('\\'), WR (JSON whitespace), SR ('{', '}', '[', ']', ':',
// ',') and CR (below 0x20). '[' and ']' or 0x20 are '{' and '}', and no
// other byte or 0x20 is either.
#define CLASSIFY(Y, QR, BR, WR, SR, CR) \
	VPCMPEQB quote<>(SB), Y, Y1; \
	VPMOVMSKB Y1, QR; \
	VPCMPEQB bslash<>(SB), Y, Y1; \
	VPMOVMSKB Y1, BR; \
	VPCMPEQB space<>(SB), Y, Y1; \
	VPCMPEQB tab<>(SB), Y, Y2; \
	VPOR Y2, Y1, Y1; \
	VPCMPEQB lf<>(SB), Y, Y2; \
	VPOR Y2, Y1, Y1; \
	VPCMPEQB cr<>(SB), Y, Y2; \
	VPOR Y2, Y1, Y1; \
	VPMOVMSKB Y1, WR; \
	VPOR space<>(SB), Y, Y3; \
	VPCMPEQB lbrace<>(SB), Y3, Y1; \
	VPCMPEQB rbrace<>(SB), Y3, Y2; \
	VPOR Y2, Y1, Y1; \
	VPCMPEQB colon<>(SB), Y, Y2; \
	VPOR Y2, Y1, Y1; \
	VPCMPEQB comma<>(SB), Y, Y2; \
	VPOR Y2, Y1, Y1; \
	VPMOVMSKB Y1, SR; \
	VPMINUB ctlmax<>(SB), Y, Y1; \
	VPCMPEQB Y1, Y, Y1; \
	VPMOVMSKB Y1, CR

// func asciiPrefix(p []byte) int
TEXT ·asciiPrefix(SB), NOSPLIT, $0-32
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	XORQ AX, AX

loop:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   done
	VMOVDQU (SI)(AX*1), Y0
	VPMOVMSKB Y0, BX
	TESTL BX, BX
	JNZ  found
	MOVQ DX, AX
	JMP  loop

found:
	TZCNTL BX, BX
	ADDQ BX, AX

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// func scanBlock(p *byte, inStr, runs uint64) (tokens, inStr1, runs1 uint64, stopped bool)
TEXT ·scanBlock(SB), NOSPLIT, $0-49
	MOVQ p+0(FP), SI
	VMOVDQU (SI), Y4
	VMOVDQU 32(SI), Y5
	CLASSIFY(Y4, AX, BX, CX, DX, DI)
	CLASSIFY(Y5, R8, R9, R10, R11, R12)
	VZEROUPPER
	SHLQ $32, R8
	ORQ  R8, AX // q
	SHLQ $32, R9
	ORQ  R9, BX // bs
	SHLQ $32, R10
	ORQ  R10, CX // ws
	SHLQ $32, R11
	ORQ  R11, DX // st
	SHLQ $32, R12
	ORQ  R12, DI // ctl

	// in = prefix XOR of q (a carry-less product by all ones) ^ inStr
	MOVQ      AX, X0
	PCMPEQB   X1, X1
	PCLMULQDQ $0x00, X1, X0
	MOVQ      X0, R8
	XORQ      inStr+8(FP), R8 // in
	MOVQ      R8, R9
	SARQ      $63, R9
	MOVQ      R9, inStr1+32(FP)

	// stop = bs | ctl & (in | ^ws)
	MOVQ CX, R10
	NOTQ R10
	ORQ  R8, R10
	ANDQ DI, R10
	ORQ  BX, R10 // stop

	// outside = ^(in | q); other = outside &^ (ws | st | ctl | bs)
	MOVQ R8, R11
	ORQ  AX, R11
	NOTQ R11 // outside
	MOVQ CX, R12
	ORQ  DX, R12
	ORQ  DI, R12
	ORQ  BX, R12
	NOTQ R12
	ANDQ R11, R12 // other

	// tokens = st&outside | q&in | other &^ (other<<1 | runs)
	ANDQ R11, DX // st & outside
	ANDQ R8, AX  // q & in
	ORQ  AX, DX
	MOVQ R12, R13
	SHLQ $1, R13
	ORQ  runs+16(FP), R13
	NOTQ R13
	ANDQ R12, R13
	ORQ  R13, DX
	SHRQ $63, R12
	MOVQ R12, runs1+40(FP)

	// only the tokens before the first stop: tokens &= (stop-1) &^ stop
	MOVQ R10, R13
	SUBQ $1, R13
	MOVQ R10, R14
	NOTQ R14
	ANDQ R14, R13
	ANDQ R13, DX
	MOVQ DX, tokens+24(FP)
	TESTQ R10, R10
	SETNE stopped+48(FP)
	RET
