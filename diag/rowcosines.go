package diag

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

// RowCosines is the row-cosine matrix of one matrix of a saved model, rows reordered by CosineMatrix's
// clustering so that aligned rows form blocks: the data of a report's heatmap panel.
type RowCosines struct {
	Tensor string    // the matrix's full name
	Shape  [2]int    // its rows and columns
	Rows   int       // rows used (the first Rows, at most the cap asked for): C is Rows × Rows
	C      []float32 // cosines, row-major
}

// IsModelDir reports whether dir holds a saved model (its config and its weights).
func IsModelDir(dir string) bool {
	for _, name := range []string{arch.ConfigFile, arch.WeightsFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// ModelRowCosines loads each model directory of dirs in turn and computes the row cosines of its matrix
// named tensor (a full name, or a part of one: the first matching matrix is used), over at most maxRows of
// its first rows. The i-th error is that of dirs[i] (nil when its cosines were computed).
func ModelRowCosines(dirs []string, tensor string, maxRows int) ([]RowCosines, []error) {
	pool := kernel.NewPool(1)
	defer pool.Close()
	out, errs := make([]RowCosines, len(dirs)), make([]error, len(dirs))
	for i, dir := range dirs {
		m, _, err := model.Load(dir, 1, pool)
		if err == nil {
			out[i], err = rowCosines(m, tensor, maxRows)
		}
		errs[i] = err
	}
	return out, errs
}

func rowCosines(m *model.Model, tensor string, maxRows int) (RowCosines, error) {
	t, ok := findMatrix(m.Specs, tensor)
	if !ok {
		var names []string
		for _, t := range m.Specs {
			if t.IsMatrix() && len(names) < 6 {
				names = append(names, t.Name)
			}
		}
		return RowCosines{}, fmt.Errorf("no matrix named %q (matrices include %s, ...)", tensor, strings.Join(names, ", "))
	}
	rows, cols := t.Shape[0], t.Shape[1]
	w := m.Params.Flat[t.Offset : t.Offset+t.Size()]
	used := min(rows, maxRows)
	if used < rows {
		ids := make([]int, used)
		for i := range ids {
			ids[i] = i
		}
		w = SelectRows(w, cols, ids)
	}
	c, _ := CosineMatrix(w, used, cols)
	return RowCosines{Tensor: t.Name, Shape: [2]int{rows, cols}, Rows: used, C: c}, nil
}

// findMatrix returns the matrix named name, else the first matrix whose name contains it.
func findMatrix(specs []arch.TensorSpec, name string) (arch.TensorSpec, bool) {
	for _, t := range specs {
		if t.Name == name && t.IsMatrix() {
			return t, true
		}
	}
	for _, t := range specs {
		if strings.Contains(t.Name, name) && t.IsMatrix() {
			return t, true
		}
	}
	return arch.TensorSpec{}, false
}
