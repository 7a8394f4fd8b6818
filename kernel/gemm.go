package kernel

import (
	"runtime"
	"sync/atomic"
)

// parallelMinWork is the m·n·k below which Pool.Gemm stays on the calling
// thread: waking the helpers costs a few microseconds, about what a
// 64×64×256 product takes on one core.
const parallelMinWork = 1 << 20

// gemmArgs are the operands of one GEMM call.
type gemmArgs struct {
	transA, transB bool
	m, n, k        int
	a              []float32
	lda            int
	b              []float32
	ldb            int
	c              []float32
	ldc            int
	accumulate     bool
	kf             int // a bf16 product's depth in values (k counts pairs; see gemmArgs.pairs); 0 otherwise
}

// gemmJob is the shared state of a parallel Pool.Gemm.
type gemmJob struct {
	args    gemmArgs
	im      *gemmImpl // the micro-kernel and blocking (float32 or bf16 pairs)
	nc      int       // columns per jc block
	mc      int       // rows per ic block (a multiple of MR, at most the impl's MC)
	nIC     int       // ic blocks
	nGroups int       // column groups per ic block; a task is (ic block, group)
	bbuf    []float32
	// shareA: the A blocks are packed once, into abuf, by the packing
	// phase of the first jc block, and every column group and later jc
	// block reads them (see sharesA). Otherwise each task packs its own.
	shareA bool
	abuf   []float32
	aBlock int            // floats per packed A block in abuf (a multiple of 16)
	jc     []jcState      // per jc block
	stepOK []atomic.Int32 // B chunks packed, per (jc block, KC step)
	bar    barrier
}

// jcState coordinates the workers on one jc block: B packing chunks and
// (ic block, group) tasks are handed out by counters, so that no worker waits
// for a particular other one except while the B block is being packed.
type jcState struct {
	packNext atomic.Int32 // next B chunk to pack
	taskNext atomic.Int32 // next task
	_        [56]byte
}

// bChunkPanels is how many NR panels of one KC step form a B packing chunk.
const bChunkPanels = 8

// maxSharedB bounds the shared packed B block (k × NC floats, all KC steps
// of a jc block at once); NC shrinks for very deep products.
const maxSharedB = 1 << 20

// Gemm computes C = op(A)·op(B) (accumulate false) or C += op(A)·op(B)
// (accumulate true) for row-major float32 matrices. op(A) is m×k: A is m×k
// with row stride lda, or, with transA, k×m with row stride lda. op(B) is k×n:
// B is k×n with row stride ldb, or, with transB, n×k. C is m×n with row
// stride ldc; elements outside the m×n window are not touched. Any m, n,
// k >= 0 is allowed; k == 0 with accumulate false zeroes C.
//
// The work is spread over all the pool's workers (see the package comment for
// the blocking), except for products smaller than about 64×64×256, which run
// on the caller. Gemm allocates nothing once the pool's packing buffers have
// grown to the problem size. It panics if a slice is too short for its
// dimensions and stride.
//
// Gemm is p.In(F32).Gemm: the float32 product, the reference of every other
// precision (precision.go).
func (p *Pool) Gemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	p.In(F32).Gemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate)
}

// gemm runs validated, non-trivial args with the micro-kernel im, in
// parallel when the product is large enough.
func (p *Pool) gemm(im *gemmImpl, args gemmArgs) {
	m, n, k := args.m, args.n, args.k
	if !p.parallel() || float64(m)*float64(n)*float64(k) < parallelMinWork {
		p.gemmSerial(0, im, args)
		return
	}
	g := &p.g
	g.im = im
	w := p.n
	// jc blocks: the whole K extent of a block of B columns is packed once
	// and shared, so the workers meet only between jc blocks. The block is
	// as wide as maxSharedB allows (the impl's NC is for the serial path).
	g.nc = min(roundUp(n, im.nr), max(im.nr, maxSharedB/k/im.nr*im.nr))
	// Tasks: ic blocks, and column groups when there are few; at least 4
	// per worker if the matrix allows, so that a worker delayed by the OS
	// (the machine is shared) leaves its work to the others.
	want := 4 * w
	g.nIC = ceilDiv(m, im.mc)
	if g.nIC < want {
		g.nIC = max(g.nIC, min(want, m/(4*im.mr)))
	}
	g.mc = roundUp(ceilDiv(m, g.nIC), im.mr)
	g.nIC = ceilDiv(m, g.mc)
	g.nGroups = 1
	if g.nIC < want {
		g.nGroups = max(1, min(ceilDiv(want, g.nIC), ceilDiv(g.nc, im.nr)/2))
	}
	blocks := ceilDiv(n, g.nc)
	if len(g.jc) < blocks {
		g.jc = make([]jcState, blocks)
	}
	for i := range g.jc[:blocks] {
		g.jc[i].packNext.Store(0)
		g.jc[i].taskNext.Store(0)
	}
	steps := blocks * ceilDiv(k, im.kc)
	if len(g.stepOK) < steps {
		g.stepOK = make([]atomic.Int32, steps)
	}
	for i := range g.stepOK[:steps] {
		g.stepOK[i].Store(0)
	}
	g.bbuf = growAligned(g.bbuf, k*roundUp(g.nc, im.nr))
	g.aBlock = roundUp(g.mc*min(im.kc, k), 16)
	g.shareA = !p.noShareA && g.sharesA(&args, blocks)
	if g.shareA {
		g.abuf = growAligned(g.abuf, ceilDiv(k, im.kc)*g.nIC*g.aBlock)
	}
	g.args = args
	p.run(p.gemmFn)
	g.args = gemmArgs{}
}

// maxSharedA bounds the shared packed A (all ic blocks and KC steps, at
// most 32 MiB: the weight gradients of the medium preset fit); a larger A is
// packed per task as before.
const maxSharedA = 1 << 23

// sharesA reports whether a parallel product packs its A blocks once and
// shares them: when each A block meets more than one task (several column
// groups, or several jc blocks) and every task would pack it (A transposed,
// no in-place kernel, or each group wider than rowAMaxPanels panels, so
// that blockKernel would not read A in place). The weight-gradient products
// (Xᵀ·dY: m is a layer width, k the batch's tokens, so there are few ic
// blocks and two or more groups each) otherwise pack A once per group. The
// packed values and the macro-kernel calls are the same either way, so the
// result is bit-identical.
func (g *gemmJob) sharesA(a *gemmArgs, blocks int) bool {
	if g.nGroups == 1 && blocks == 1 {
		return false
	}
	if ceilDiv(a.k, g.im.kc)*g.nIC*g.aBlock > maxSharedA {
		return false
	}
	if a.transA || g.im.kernRowA == nil {
		return true
	}
	// The narrowest group: the last jc block has the fewest panels.
	last := a.n - (blocks-1)*g.nc
	return ceilDiv(last, g.im.nr)/g.nGroups > rowAMaxPanels
}

// GemmOn is Gemm on the calling goroutine only, using worker w's packing
// buffers. It is meant for the small products inside a For body (for
// example per-attention-head 256×32×256 products), where w is the body's
// worker index; different workers may call it concurrently.
// It is p.In(F32).GemmOn.
func (p *Pool) GemmOn(w int, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	p.In(F32).GemmOn(w, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate)
}

// trivial validates the arguments and handles the empty cases, reporting
// whether nothing is left to do.
func (a *gemmArgs) trivial() bool {
	if a.m < 0 || a.n < 0 || a.k < 0 {
		panic("kernel.Gemm: negative dimension")
	}
	ra, ca := a.m, a.k
	if a.transA {
		ra, ca = a.k, a.m
	}
	rb, cb := a.k, a.n
	if a.transB {
		rb, cb = a.n, a.k
	}
	checkMatrix("A", len(a.a), ra, ca, a.lda)
	checkMatrix("B", len(a.b), rb, cb, a.ldb)
	checkMatrix("C", len(a.c), a.m, a.n, a.ldc)
	if a.m == 0 || a.n == 0 {
		return true
	}
	if a.k == 0 {
		if !a.accumulate {
			for i := 0; i < a.m; i++ {
				clear(a.c[i*a.ldc : i*a.ldc+a.n])
			}
		}
		return true
	}
	return false
}

func checkMatrix(name string, l, rows, cols, ld int) {
	if ld < max(cols, 1) {
		panic("kernel.Gemm: leading dimension of " + name + " smaller than its row length")
	}
	if rows > 0 && cols > 0 && l < (rows-1)*ld+cols {
		panic("kernel.Gemm: slice " + name + " too short")
	}
}

// gemmWorker is worker w's part of a parallel Gemm. For each jc block: take
// B packing chunks (one KC step × up to bChunkPanels panels, in step order)
// until none are left, then take (ic block, column group) tasks; a task runs
// all KC steps of its C block (pack A, macro-kernel), waiting before each step
// until that step's B chunks are all packed. So a worker delayed while
// packing holds the others up only on the steps it was packing. With a
// shared A (g.shareA), the first jc block's chunks of each step also include
// one chunk per A block, and the tasks read A from abuf instead of packing it.
func (p *Pool) gemmWorker(w int) {
	g := &p.g
	a := &g.args
	im := g.im
	mr, nr, kcMax := im.mr, im.nr, im.kc
	sc := &p.scratch[w]
	if !g.shareA {
		sc.a = growAligned(sc.a, g.mc*min(kcMax, a.k))
	}
	sc.tile = growAligned(sc.tile, mr*nr)
	steps := ceilDiv(a.k, kcMax)
	ncR := roundUp(g.nc, nr)
	tasks := g.nIC * g.nGroups
	for jb, jc := 0, 0; jc < a.n; jb, jc = jb+1, jc+g.nc {
		st := &g.jc[jb]
		stepOK := g.stepOK[jb*steps : (jb+1)*steps]
		nc := min(g.nc, a.n-jc)
		np := ceilDiv(nc, nr)
		pg := ceilDiv(np, bChunkPanels)
		nA := 0 // A chunks per step
		if g.shareA && jb == 0 {
			nA = g.nIC
		}
		per := pg + nA
		chunks := int32(steps * per)
		for {
			ch := st.packNext.Add(1) - 1
			if ch >= chunks {
				break
			}
			s, q := int(ch)/per, int(ch)%per
			pc := s * kcMax
			kc := min(kcMax, a.k-pc)
			if q >= pg {
				icb := q - pg
				ic := icb * g.mc
				off := (s*g.nIC + icb) * g.aBlock
				im.packA(im, a, g.abuf[off:off+g.aBlock], ic, min(g.mc, a.m-ic), pc, kc)
				stepOK[s].Add(1)
				continue
			}
			q0, q1 := q*bChunkPanels, min(np, (q+1)*bChunkPanels)
			off := s*kcMax*ncR + q0*kc*nr
			im.packB(im, a, g.bbuf[off:off+(q1-q0)*kc*nr], jc+q0*nr, min(nc, q1*nr)-q0*nr, pc, kc)
			stepOK[s].Add(1)
		}
		for {
			t := int(st.taskNext.Add(1) - 1)
			if t >= tasks {
				break
			}
			icb, grp := t/g.nGroups, t%g.nGroups
			ic := icb * g.mc
			mc := min(g.mc, a.m-ic)
			plo, phi := grp*np/g.nGroups, (grp+1)*np/g.nGroups
			c := a.c[ic*a.ldc+jc:]
			for s := 0; s < steps; s++ {
				for spin := 1; stepOK[s].Load() < int32(per); spin++ {
					if spin%256 == 0 {
						runtime.Gosched()
					}
				}
				pc := s * kcMax
				kc := min(kcMax, a.k-pc)
				if g.shareA {
					off := (s*g.nIC + icb) * g.aBlock
					macroKernel(im, sc.tile, g.abuf[off:off+g.aBlock], mc, kc, g.bbuf[s*kcMax*ncR:], plo, phi, nc, c, a.ldc, a.accumulate || s > 0)
					continue
				}
				blockKernel(im, sc, a, ic, mc, pc, kc, g.bbuf[s*kcMax*ncR:], plo, phi, nc, c, a.accumulate || s > 0)
			}
		}
		if jc+g.nc < a.n {
			g.bar.wait(p.n) // the next block's B overwrites bbuf
		}
	}
}

// gemmSerial runs the whole blocked GEMM on the caller with worker w's
// buffers and the micro-kernel im.
func (p *Pool) gemmSerial(w int, im *gemmImpl, args gemmArgs) {
	sc := &p.scratch[w]
	// The arguments live in the scratch (not on the stack) because the
	// packers are called through function values, which makes them escape.
	sc.args = args
	a := &sc.args
	defer func() { sc.args = gemmArgs{} }()
	kcMax := min(im.kc, a.k)
	sc.a = growAligned(sc.a, min(im.mc, roundUp(a.m, im.mr))*kcMax)
	sc.b = growAligned(sc.b, min(im.nc, roundUp(a.n, im.nr))*kcMax)
	sc.tile = growAligned(sc.tile, im.mr*im.nr)
	for jc := 0; jc < a.n; jc += im.nc {
		nc := min(im.nc, a.n-jc)
		np := ceilDiv(nc, im.nr)
		for pc := 0; pc < a.k; pc += im.kc {
			kc := min(im.kc, a.k-pc)
			im.packB(im, a, sc.b, jc, nc, pc, kc)
			accum := a.accumulate || pc > 0
			for ic := 0; ic < a.m; ic += im.mc {
				mc := min(im.mc, a.m-ic)
				blockKernel(im, sc, a, ic, mc, pc, kc, sc.b, 0, np, nc, a.c[ic*a.ldc+jc:], accum)
			}
		}
	}
}

// rowAMaxPanels is the largest number of B panels per A block for which A
// is read in place by kernRowA instead of being packed: with one panel (a
// product only NR wide, like attention's P·V) every A element is used once,
// so packing would double the A traffic.
var rowAMaxPanels = 1

// blockKernel computes the C block of op(A) rows [ic, ic+mc) × steps
// [pc, pc+kc) times B panels [plo, phi) of the packed block bp: it packs the
// A block into the worker's scratch and runs the macro-kernel, or, when few B
// panels meet the A block, runs the in-place kernel on A itself (packing only
// a ragged last row panel).
func blockKernel(im *gemmImpl, sc *scratch, a *gemmArgs, ic, mc, pc, kc int, bp []float32, plo, phi, nc int, c []float32, accum bool) {
	kern := im.kernRowA
	if a.transA || kern == nil || phi-plo > rowAMaxPanels {
		im.packA(im, a, sc.a, ic, mc, pc, kc)
		macroKernel(im, sc.tile, sc.a, mc, kc, bp, plo, phi, nc, c, a.ldc, accum)
		return
	}
	mr, nr := im.mr, im.nr
	full := mc / mr * mr
	if full < mc {
		im.packA(im, a, sc.a, ic+full, mc-full, pc, kc)
	}
	acc := 0
	if accum {
		acc = 1
	}
	for jp := plo; jp < phi; jp++ {
		j := jp * nr
		nrr := min(nr, nc-j)
		bpan := &bp[jp*kc*nr]
		for ir := 0; ir < full; ir += mr {
			ap := &a.a[(ic+ir)*a.lda+pc]
			if nrr == nr {
				kern(kc, ap, a.lda, bpan, &c[ir*a.ldc+j], a.ldc, acc)
				continue
			}
			kern(kc, ap, a.lda, bpan, &sc.tile[0], nr, 0)
			storeTile(sc.tile, nr, mr, nrr, c[ir*a.ldc+j:], a.ldc, accum)
		}
		if full < mc {
			macroKernel(im, sc.tile, sc.a, mc-full, kc, bp, jp, jp+1, nc, c[full*a.ldc:], a.ldc, accum)
		}
	}
}

// storeTile writes (or, with accum, adds) the rows×cols corner of an edge
// tile (row stride nr) into c.
func storeTile(tile []float32, nr, rows, cols int, c []float32, ldc int, accum bool) {
	for i := 0; i < rows; i++ {
		crow := c[i*ldc : i*ldc+cols]
		trow := tile[i*nr : i*nr+cols]
		if accum {
			for jj, v := range trow {
				crow[jj] += v
			}
		} else {
			copy(crow, trow)
		}
	}
}

// macroKernel multiplies the packed mc×kc A block by B panels [plo, phi) of
// the packed kc×nc B block into c (the C block's top-left corner): the second
// and first loops around the micro-kernel. Edge tiles go through tile.
func macroKernel(im *gemmImpl, tile, ap []float32, mc, kc int, bp []float32, plo, phi, nc int, c []float32, ldc int, accum bool) {
	mr, nr := im.mr, im.nr
	acc := 0
	if accum {
		acc = 1
	}
	for jp := plo; jp < phi; jp++ {
		j := jp * nr
		nrr := min(nr, nc-j)
		bpan := &bp[jp*kc*nr]
		for ir := 0; ir < mc; ir += mr {
			mrr := min(mr, mc-ir)
			apan := &ap[ir*kc]
			if mrr == mr && nrr == nr {
				im.kern(kc, apan, bpan, &c[ir*ldc+j], ldc, acc)
				continue
			}
			im.kern(kc, apan, bpan, &tile[0], nr, 0)
			storeTile(tile, nr, mrr, nrr, c[ir*ldc+j:], ldc, accum)
		}
	}
}

// packAGeneric packs rows [ic, ic+mc) × columns [pc, pc+kc) of op(A) into dst as
// MR-row panels: panel q holds, for each kk, the MR values op(A)[ic+q·MR+r][pc+kk]
// (zero beyond row mc).
func packAGeneric(im *gemmImpl, a *gemmArgs, dst []float32, ic, mc, pc, kc int) {
	if a.transA {
		packCopy(a.a[pc*a.lda+ic:], a.lda, kc, mc, dst, im.mr)
	} else {
		packGather(a.a[ic*a.lda+pc:], a.lda, kc, mc, dst, im.mr)
	}
}

// packBGeneric packs rows [pc, pc+kc) × columns [j0, j0+nc) of op(B) into dst as
// NR-column panels: panel q holds, for each kk, the NR values
// op(B)[pc+kk][j0+q·NR+c] (zero beyond column nc).
func packBGeneric(im *gemmImpl, a *gemmArgs, dst []float32, j0, nc, pc, kc int) {
	if a.transB {
		packGather(a.b[j0*a.ldb+pc:], a.ldb, kc, nc, dst, im.nr)
	} else {
		packCopy(a.b[pc*a.ldb+j0:], a.ldb, kc, nc, dst, im.nr)
	}
}

// packCopy packs a kc×cols block whose rows are contiguous (src row kk at
// src[kk*lds:]) into panels of w columns: dst[q*kc*w + kk*w + c] =
// src[kk*lds + q*w + c], zero-filled past cols. Rows go in groups of 8 across
// all panels, so that the source is read row by row (see copyPackAVX512).
func packCopy(src []float32, lds, kc, cols int, dst []float32, w int) {
	panels := ceilDiv(cols, w)
	for kk0 := 0; kk0 < kc; kk0 += 8 {
		kk1 := min(kk0+8, kc)
		for q := 0; q < panels; q++ {
			cw := min(w, cols-q*w)
			for kk := kk0; kk < kk1; kk++ {
				s := src[kk*lds+q*w : kk*lds+q*w+cw]
				d := dst[q*kc*w+kk*w : q*kc*w+kk*w+w]
				for i, v := range s {
					d[i] = v
				}
				if cw < w {
					clear(d[cw:])
				}
			}
		}
	}
}

// packGather packs a block whose columns are contiguous (column c of the
// block, i.e. row c of the source, at src[c*lds:], kc long) into panels of w
// columns: dst[q*kc*w + kk*w + r] = src[(q*w+r)*lds + kk], zero-filled past
// cols. Four source rows are interleaved at a time.
func packGather(src []float32, lds, kc, cols int, dst []float32, w int) {
	for q := 0; q*w < cols; q++ {
		cw := min(w, cols-q*w)
		d := dst[q*kc*w : (q+1)*kc*w]
		r := 0
		for ; r+4 <= cw; r += 4 {
			o := (q*w + r) * lds
			s0 := src[o : o+kc]
			s1 := src[o+lds : o+lds+kc]
			s2 := src[o+2*lds : o+2*lds+kc]
			s3 := src[o+3*lds : o+3*lds+kc]
			for kk := range s0 {
				e := d[kk*w+r : kk*w+r+4 : kk*w+r+4]
				e[0], e[1], e[2], e[3] = s0[kk], s1[kk], s2[kk], s3[kk]
			}
		}
		for ; r < cw; r++ {
			o := (q*w + r) * lds
			for kk, v := range src[o : o+kc] {
				d[kk*w+r] = v
			}
		}
		if cw < w {
			for kk := 0; kk < kc; kk++ {
				clear(d[kk*w+cw : kk*w+w])
			}
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func roundUp(a, b int) int { return ceilDiv(a, b) * b }
