package kernel

import (
	"strings"
	"testing"
)

// TestChooseImpl: KernelEnv names a kernel set of the CPU's list, "" takes the best, and a name the CPU cannot
// run (or no set's name) keeps the best and says so, naming the variable and the sets it has.
func TestChooseImpl(t *testing.T) {
	bf := *avx512Impl
	bf.dpbf16 = true
	all := []*impl{&bf, avx512Impl, avx2Impl, genericImpl}
	for _, tc := range []struct {
		env  string
		l    []*impl
		want *impl
		err  string
	}{
		{"", all, &bf, ""},
		{"avx512", all, &bf, ""},
		{"avx512-nobf16", all, avx512Impl, ""},
		{"avx2", all, avx2Impl, ""},
		{"generic", all, genericImpl, ""},
		{"avx512", []*impl{avx512Impl, avx2Impl, genericImpl}, avx512Impl, ""},
		{"avx512", []*impl{avx2Impl, genericImpl}, avx2Impl, `SMALLINIT_KERNEL="avx512": this CPU runs the kernel sets avx2, generic; using avx2`},
		{"amx", all, &bf, `runs the kernel sets avx512, avx512-nobf16, avx2, generic`},
	} {
		got, err := chooseImpl(tc.env, tc.l)
		if got != tc.want {
			t.Errorf("%q: chose %s", tc.env, implKnob(got))
		}
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %v, want %q", tc.env, err, tc.err)
		}
	}
}

// TestKernelPaths: the paths this CPU runs, best first, each knowing which precisions it runs natively; a
// CPU with AVX2 runs bf16 on every path but the generic one.
func TestKernelPaths(t *testing.T) {
	paths := KernelPaths()
	if paths[0] != implKnob(available()[0]) || paths[len(paths)-1] != "generic" {
		t.Fatalf("paths %v", paths)
	}
	for _, p := range paths {
		if !F32.NativeOn(p) || BF16.NativeOn(p) != (p != "generic") {
			t.Errorf("%s: f32 native %v, bf16 native %v", p, F32.NativeOn(p), BF16.NativeOn(p))
		}
	}
	if BF16.NativeOn("amx") {
		t.Error("an unknown path runs bf16")
	}
}
