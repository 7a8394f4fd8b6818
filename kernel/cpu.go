package kernel

import (
	"bufio"
	"io"
	"os"
	"runtime"
	"strings"
)

// CPUModel names this machine's processor for records whose measurements
// hold only on the CPU they were taken on (a precision or packing choice):
// the "model name" of /proc/cpuinfo on Linux, else the architecture, with
// the kernel implementation chosen at init and whether AVX512_BF16 is
// native, since a virtual CPU's model name may hide both.
func CPUModel() string {
	name := runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(io.LimitReader(f, 1<<20))
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				name = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	bf := ""
	if HasBF16() {
		bf = ", avx512_bf16"
	}
	return name + " (" + Impl() + bf + ")"
}
