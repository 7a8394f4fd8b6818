package analyze

import (
	"fmt"
	"strings"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/report"
)

// Heatmaps loads the models of each source's panels (report.HeatmapSources) and computes the row-cosine
// matrix (diag.ModelRowCosines) of tensor (a full name, or a part of one: the first matching matrix is used;
// "" for report.DefaultHeatmapTensor) over at most report.MaxHeatmapRows rows: the heatmaps a report draws.
// A run none of whose panels can be made is a problem, not a failure.
func Heatmaps(srcs []report.HeatmapSource, tensor string) ([]report.HeatmapSet, []string) {
	if tensor == "" {
		tensor = report.DefaultHeatmapTensor
	}
	var sets []report.HeatmapSet
	var problems []string
	for _, src := range srcs {
		s := report.HeatmapSet{Run: src.Run, Problems: append([]string(nil), src.Problems...)}
		dirs := make([]string, len(src.Panels))
		for i, p := range src.Panels {
			dirs[i] = p.Dir
		}
		cos, errs := diag.ModelRowCosines(dirs, tensor, report.MaxHeatmapRows)
		for i, p := range src.Panels {
			if errs[i] != nil {
				s.Problems = append(s.Problems, p.Problem+": "+errs[i].Error())
				continue
			}
			c := cos[i]
			s.Tensor, s.Shape, s.UsedRows = c.Tensor, c.Shape, c.Rows
			s.Panels = append(s.Panels, report.HeatmapPanel{Label: p.Label, Step: p.Step, Rows: c.Rows, C: c.C})
		}
		if len(s.Panels) == 0 {
			problems = append(problems, fmt.Sprintf("%s: %s", src.Run.ID, strings.Join(s.Problems, "; ")))
			continue
		}
		sets = append(sets, s)
	}
	return sets, problems
}
