/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The gate of a fake libcuda, in the instruction shapes of the real ones
 * (see docs/libcuda.md). Built at test time with one of:
 *   SHAPE_590        one initialiser, or $0x40 (590.48.01, field 0x5f14)
 *   SHAPE_615        three inlined initialisers in EDX, ECX and R8D, each
 *                    with or $0x40 and an alternate or $0xc0 (field 0x8f1c)
 *   SHAPE_COMPUTED   535-like: init plus a clear-then-or of a computed bit
 *   SHAPE_DECOY      a look-alike field and mask guarding attribute 117
 *   SHAPE_AMBIGUOUS  attributes 116 and 124 test two common bytes
 *   SHAPE_UNPROVABLE the byte is also stored from a call's return value
 *   SHAPE_RMW        525.147.05: the initialiser is `orb $0x40' to memory at
 *                    the start of its routine, plus the computed store
 *   SHAPE_NOINIT     only the computed store could set the bit: refused
 *   SHAPE_BTR        535 shape plus a `btrl $5' of the byte (made `btsl')
 *   SHAPE_WIDE       535 shape plus a word store of a call's result that
 *                    covers the byte from below: refused
 *   SHAPE_MEMSET     535 shape plus a memset of the device structure
 *                    (through the pointer that tests the byte): refused
 *   SHAPE_REPSTOS    the same with rep stosq: refused
 *   SHAPE_NEARPTR    535 shape plus a pointer to the dword below the byte
 *                    and a qword store through it: refused
 * INIT_COPY picks which initialiser cuInit runs (SHAPE_615: 0, 1 or 2), as
 * the real driver runs only the copy for the GPU's family.
 */
#if defined(SHAPE_590)
#define FIELD 0x5f14
#elif defined(SHAPE_615)
#define FIELD 0x8f1c
#else
#define FIELD 0x3684
#endif
#define OTHER (FIELD - 0x88)	/* attribute 124 also needs OTHER & 0x08 */
#define DECOY (FIELD + 0x0c)
#define HAL 0xa000		/* the device's function table, far from FIELD */
#ifndef INIT_COPY
#define INIT_COPY 2
#endif

	.text

/* The export: a liveness check, then a jump through a relocated slot. */
	.globl	cuDeviceGetAttribute
	.type	cuDeviceGetAttribute, @function
cuDeviceGetAttribute:
	.cfi_startproc
	cmpl	$0x321cba00, nvs_deinit(%rip)
	je	1f
	jmp	*attr_slot(%rip)
1:	movl	$4, %eax
	ret
	.cfi_endproc
	.size	cuDeviceGetAttribute, .-cuDeviceGetAttribute

/* The implementation: (int *val, int attr, int dev) -> dispatcher(dev, attr, val). */
	.type	attr_impl, @function
attr_impl:
	.cfi_startproc
	testl	%edx, %edx
	jne	2f
	testq	%rdi, %rdi
	je	3f
	movq	%rdi, %rdx
	leaq	nvs_dev(%rip), %rdi
	jmp	attr_dispatch
2:	movl	$101, %eax		/* CUDA_ERROR_INVALID_DEVICE */
	ret
3:	movl	$1, %eax		/* CUDA_ERROR_INVALID_VALUE */
	ret
	.cfi_endproc
	.size	attr_impl, .-attr_impl

	.type	attr_dispatch, @function
attr_dispatch:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	cmpl	$0x86, %esi
	ja	.Lbad
	movq	%rdx, %rbx
	movl	%esi, %esi
	leaq	.Ltable(%rip), %rdx
	movslq	(%rdx,%rsi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lattr116:
	xorl	%eax, %eax
	testb	$0x20, FIELD(%rdi)
	je	1f
#ifdef SHAPE_AMBIGUOUS
	testb	$0x20, FIELD+4(%rdi)
	je	1f
#endif
	xorl	%eax, %eax
	cmpb	$0, nvs_gdr(%rip)
	setne	%al
1:	movl	%eax, (%rbx)
	jmp	.Lok
.Lattr124:
	xorl	%eax, %eax
	testb	$0x08, OTHER(%rdi)
	je	1f
#ifdef SHAPE_AMBIGUOUS
	testb	$0x20, FIELD+4(%rdi)
	je	1f
#endif
	testb	$0x20, FIELD(%rdi)
	je	1f
	xorl	%eax, %eax
	cmpb	$0, nvs_gdr(%rip)
	setne	%al
1:	movl	%eax, (%rbx)
	jmp	.Lok
.Lattr110:
	movzbl	FIELD(%rdi), %eax
	shrb	$5, %al
	andl	$1, %eax
	movl	%eax, (%rbx)
	jmp	.Lok
.Lattr117:
#ifdef SHAPE_DECOY
	/* the decoy: same mask, another byte, another attribute */
	xorl	%eax, %eax
	testb	$0x20, DECOY(%rdi)
	setne	%al
	movl	%eax, (%rbx)
	jmp	.Lok
#endif
.Lattr103:
	movl	$1, (%rbx)
	jmp	.Lok
.Lattr118:
	movl	$100, (%rbx)
	jmp	.Lok
.Ldefault:
	movl	$0, (%rbx)
.Lok:
	xorl	%eax, %eax
	popq	%rbx
	.cfi_remember_state
	.cfi_def_cfa_offset 8
	ret
.Lbad:
	.cfi_restore_state
	movl	$1, %eax
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	attr_dispatch, .-attr_dispatch

	.section .rodata
	.p2align 2
.Ltable:
	.set	i, 0
	.rept	0x87
	.if i == 103
	.long	.Lattr103 - .Ltable
	.elseif i == 110
	.long	.Lattr110 - .Ltable
	.elseif i == 116
	.long	.Lattr116 - .Ltable
	.elseif i == 117
	.long	.Lattr117 - .Ltable
	.elseif i == 118
	.long	.Lattr118 - .Ltable
	.elseif i == 124
	.long	.Lattr124 - .Ltable
	.else
	.long	.Ldefault - .Ltable
	.endif
	.set	i, i + 1
	.endr

	.text
/* ---- initialisers ---- */

#if defined(SHAPE_RMW)
	/* 525.147.05 at 0x3f8d10: a read-modify-write first, then the companion field */
	.type	init0, @function
init0:
	.cfi_startproc
	orb	$0x40, FIELD(%rdi)
	cmpl	$0x9, 0xc40(%rdi)
	sbbl	%eax, %eax
	notl	%eax
	andl	$0x64, %eax
	movl	%eax, FIELD+4(%rdi)
	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	init0, .-init0
#elif defined(SHAPE_NOINIT)
	/* the setup routine sets only the companion field */
	.type	init0, @function
init0:
	.cfi_startproc
	movl	$0x64, FIELD+4(%rdi)
	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	init0, .-init0
#elif defined(SHAPE_590)
	.type	init0, @function
init0:
	.cfi_startproc
	movzbl	FIELD(%rdi), %eax
	movl	%eax, %edx
	orl	$0x40, %edx
	cmpl	$0x8, 0xc60(%rdi)
	movb	%dl, FIELD(%rdi)
	ja	1f
	movl	$0x64, 0x3688(%rdi)
1:	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	init0, .-init0
#else
/* 535/615 shape: or $0x40, and on some parts the alternate or $0xc0 from the load. */
	.type	init0, @function
init0:
	.cfi_startproc
	movzbl	FIELD(%rdi), %eax
	movl	%eax, %edx
	orl	$0x40, %edx
	cmpl	$0x8, 0xc40(%rdi)
	movb	%dl, FIELD(%rdi)
	jbe	2f
	testb	$1, 0x36ec(%rdi)
	je	1f
	movl	$0xc8, 0x3688(%rdi)
	orl	$0xffffffc0, %eax
	movb	%al, FIELD(%rdi)
1:	movl	nvs_quirk(%rip), %eax
	testl	%eax, %eax
	je	2f
	andb	$0x3f, FIELD(%rdi)
2:	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	init0, .-init0
#endif

#ifdef SHAPE_615
	/* inlined copy in ECX, alternate in R9D, base in RSI */
	.type	init1, @function
init1:
	.cfi_startproc
	movq	%rdi, %rsi
	movzbl	FIELD(%rsi), %r9d
	movl	%r9d, %ecx
	orl	$0x40, %ecx
	cmpl	$0x8, 0xc40(%rsi)
	movb	%cl, FIELD(%rsi)
	jbe	1f
	orl	$0xffffffc0, %r9d
	movb	%r9b, FIELD(%rsi)
1:	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	init1, .-init1

	/* inlined copy in R8D, alternate in R10D, base in RBX */
	.type	init2, @function
init2:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	movq	%rdi, %rbx
	movzbl	FIELD(%rbx), %r10d
	movl	%r10d, %r8d
	orl	$0x40, %r8d
	cmpl	$0x8, 0xc40(%rbx)
	movb	%r8b, FIELD(%rbx)
	jbe	1f
	orl	$0xffffffc0, %r10d
	movb	%r10b, FIELD(%rbx)
1:	xorl	%eax, %eax
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	init2, .-init2
#endif

#if defined(SHAPE_COMPUTED) || defined(SHAPE_DECOY) || defined(SHAPE_AMBIGUOUS) || \
	defined(SHAPE_UNPROVABLE) || defined(SHAPE_RMW) || defined(SHAPE_NOINIT)
#define HAVE_RECOMPUTE
	/* 535.261.03 near 0x3cd993: the bit recomputed from a condition (esi). */
	.type	recompute, @function
recompute:
	.cfi_startproc
	testl	%esi, %esi
	setne	%al
	movzbl	%al, %eax
	shll	$5, %eax
	movl	%eax, %edx
	movzbl	FIELD(%rdi), %eax
	andl	$0xffffffdf, %eax
	orl	%edx, %eax
	movb	%al, FIELD(%rdi)
	xorl	%eax, %eax		/* CUDA_SUCCESS: the value in eax is dead */
	ret
	.cfi_endproc
	.size	recompute, .-recompute
#endif

#ifdef SHAPE_DECOY
	.type	decoy_init, @function
decoy_init:
	.cfi_startproc
	/* an initialiser of the look-alike byte: must not be touched */
	movzbl	DECOY(%rdi), %eax
	orl	$0x40, %eax
	movb	%al, DECOY(%rdi)
	/*
	 * A store to the real byte that sets another bit: preserves 0x20. It
	 * runs under a condition, as every such store in the real builds does
	 * (docs/libcuda.md), so it is not an initialiser.
	 */
	testb	$0x01, OTHER(%rdi)
	je	1f
	orb	$0x10, FIELD(%rdi)
1:	ret
	.cfi_endproc
	.size	decoy_init, .-decoy_init
#endif

#ifdef SHAPE_UNPROVABLE
	.type	flags_from_elsewhere, @function
flags_from_elsewhere:
	.cfi_startproc
	movzbl	nvs_gdr(%rip), %eax
	ret
	.cfi_endproc
	.size	flags_from_elsewhere, .-flags_from_elsewhere

	/* the byte overwritten with a value that comes back from a call */
	.type	reload, @function
reload:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	movq	%rdi, %rbx
	call	flags_from_elsewhere
	movb	%al, FIELD(%rbx)
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	reload, .-reload
#endif

#ifdef SHAPE_BTR
	/* clears the bit with a bit-test-and-reset of the dword at the byte */
	.type	drop_gdr, @function
drop_gdr:
	.cfi_startproc
	btrl	$5, FIELD(%rdi)
	ret
	.cfi_endproc
	.size	drop_gdr, .-drop_gdr
#endif

#ifdef SHAPE_WIDE
	/* a word store from the byte below: the byte gets %ah, a call's result */
	.type	wide_reload, @function
wide_reload:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	movq	%rdi, %rbx
	call	wide_value
	movw	%ax, FIELD-1(%rbx)
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	wide_reload, .-wide_reload

	.type	wide_value, @function
wide_value:
	.cfi_startproc
	movzwl	nvs_quirk(%rip), %eax
	ret
	.cfi_endproc
	.size	wide_value, .-wide_value
#endif

#ifdef SHAPE_MEMSET
	/* a reset that wipes the whole device structure it was handed */
	.type	reset_dev, @function
reset_dev:
	.cfi_startproc
	testb	$0x20, FIELD(%rdi)
	je	1f
	xorl	%esi, %esi
	movl	$0x10000, %edx
	jmp	memset@PLT
1:	ret
	.cfi_endproc
	.size	reset_dev, .-reset_dev
#endif

#ifdef SHAPE_REPSTOS
	.type	wipe_dev, @function
wipe_dev:
	.cfi_startproc
	testb	$0x20, FIELD(%rdi)
	je	1f
	movl	$0x2000, %ecx
	xorl	%eax, %eax
	rep stosq
1:	ret
	.cfi_endproc
	.size	wipe_dev, .-wipe_dev
#endif

#ifdef SHAPE_NEARPTR
	/* a pointer to a field just below the byte, and a store through it */
	.type	near_clear, @function
near_clear:
	.cfi_startproc
	leaq	FIELD-4(%rdi), %rax
	movq	$0, (%rax)
	ret
	.cfi_endproc
	.size	near_clear, .-near_clear
#endif

/* Called by the C part's cuInit: set the device up like a GeForce. */
	.globl	nvs_fake_init
	.type	nvs_fake_init, @function
nvs_fake_init:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	leaq	nvs_dev(%rip), %rbx
	orb	$0x08, OTHER(%rbx)
	/*
	 * The device's function table, as the real drivers fill it (each
	 * initialiser's address loaded with lea and stored): nvsidecar counts
	 * an initialiser only when its routine is called or stored like this.
	 */
	leaq	init0(%rip), %rax
	movq	%rax, HAL(%rbx)
#ifdef SHAPE_615
	leaq	init1(%rip), %rax
	movq	%rax, HAL+8(%rbx)
	leaq	init2(%rip), %rax
	movq	%rax, HAL+16(%rbx)
#endif
	movq	%rbx, %rdi
#if defined(SHAPE_615) && INIT_COPY == 1
	call	init1
#elif defined(SHAPE_615) && INIT_COPY == 2
	call	init2
#else
	call	init0
#endif
#ifdef HAVE_RECOMPUTE
	movq	%rbx, %rdi
	xorl	%esi, %esi		/* GeForce: the condition is false */
	call	recompute
#endif
#ifdef SHAPE_DECOY
	movq	%rbx, %rdi
	call	decoy_init
#endif
#ifdef SHAPE_UNPROVABLE
	movq	%rbx, %rdi
	call	reload
#endif
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	nvs_fake_init, .-nvs_fake_init

	.section .data.rel.ro, "aw"
	.p2align 3
attr_slot:
	.quad	attr_impl

	.data
nvs_gdr:
	.byte	1
	.p2align 2
nvs_quirk:
	.long	0
nvs_deinit:
	.long	0

	.bss
	.p2align 6
nvs_dev:
	.zero	0x10000

#ifdef PAD_MB
	/* a libcuda-sized file for the disk-full, interrupted-write and benchmark tests */
	.section .rodata.pad, "a"
	.zero	PAD_MB * 1048576
#endif
	.section .note.GNU-stack, "", @progbits
