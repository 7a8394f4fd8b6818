package budget

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// KeyOf is the key the probes of the base recipe base, trained by eng, are measured under: eng's name, the
// device it trains on and the precision of base's matmuls (f32 when it names none).
func KeyOf(eng train.Engine, base recipe.Config) ProbeKey {
	return ProbeKey{Engine: eng.Name(), Device: eng.TrainsOn(), Precision: cmp.Or(base.Train.Precision, kernel.F32.String())}
}

// Precision resolves the train.precision of a plan's base recipe base for every run of the plan, by the probe
// of package train's precision table. A recipe that says "auto" has its eligible precisions timed once on the
// base model (train.PrecisionFor, recorded in dir's train.PrecisionFile and reused on resume; without record,
// a plan printed before it runs, train.PeekPrecision, which writes nothing): the faster is returned (prec)
// with a note that says why, for the printed plan. A named precision this CPU does not run in hardware is
// refused, before anything is sized or trained, rather than at its first run; any other named precision is
// the recipe's own, and prec is "".
func Precision(dir string, base recipe.Config, record bool, log io.Writer) (prec, note string, err error) {
	if base.Train.Precision != train.PrecisionAuto {
		named, err := train.ParsePrecision(base.Train.Precision)
		if err != nil {
			return "", "", err
		}
		if !named.Native() {
			// The plan pins its precision so that every run a comparison reads has it (docs/definitions.md §7):
			// another precision is another experiment, not a fallback.
			return "", "", fmt.Errorf("%s = %s: this CPU (kernel path %s) runs it only through the pure-Go twin, "+
				"tens of times slower: run the plan on a CPU with AVX2 or AVX512_BF16, or, for another experiment, "+
				"set %s = \"f32\" or \"auto\" in every arm and use a new --out", recipe.KeyPrecision, named, kernel.KernelPath(), recipe.KeyPrecision)
		}
		return "", "", nil
	}
	measure := train.PrecisionFor
	if !record {
		measure = train.PeekPrecision
	}
	pc, err := measure(filepath.Join(dir, train.PrecisionFile), base, log)
	if err != nil {
		return "", "", err
	}
	return pc.Precision, "auto: the eligible precisions timed on the base model, the faster taken; " + pc.String(), nil
}
