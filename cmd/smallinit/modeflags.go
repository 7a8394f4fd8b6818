package main

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/recipe"
)

// A flag that does something only in one mode of its command (--gamma under the γ rule, --top-k when sampling)
// is refused when given in another, naming the flag, its value and the mode it needs, rather than ignored: a
// user who writes it expects it to act. Only flags written on the command line count (a default never does).
// Each command with such flags lists them (modal); main checks them once the command line is parsed.

// onlyWith is one such flag: ok says whether the command is in the flag's mode, mode how the user selects it.
type onlyWith struct {
	flag string // without the dashes
	ok   bool
	mode string
}

// modal is a command some of whose flags act only in some of its modes.
type modal interface{ onlyWith() []onlyWith }

// givenFlags are the flags written on the command line, by name, with their values as parsed ("" for a bool).
func givenFlags(kctx *kong.Context) map[string]string {
	given := map[string]string{}
	for _, p := range kctx.Path {
		if p.Flag == nil || p.Resolved {
			continue
		}
		v := p.Flag.Target
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		text := fmt.Sprint(v.Interface())
		if v.CanAddr() {
			if s, ok := v.Addr().Interface().(fmt.Stringer); ok {
				text = s.String()
			}
		}
		if p.Flag.IsBool() {
			text = ""
		}
		given[p.Flag.Name] = text
	}
	return given
}

// checkOnlyWith refuses the first flag of rules that is given while its command is not in its mode.
func checkOnlyWith(given map[string]string, rules []onlyWith) error {
	for _, r := range rules {
		if v, ok := given[r.flag]; ok && !r.ok {
			return fmt.Errorf("%s: only with %s; here it would do nothing (leave it out)", strings.TrimSpace("--"+r.flag+" "+v), r.mode)
		}
	}
	return nil
}

// checkModes checks the selected command's modal flags (nothing for a command without any).
func checkModes(kctx *kong.Context) error {
	sel := kctx.Selected()
	if sel == nil || !sel.Target.CanAddr() {
		return nil
	}
	m, ok := sel.Target.Addr().Interface().(modal)
	if !ok {
		return nil
	}
	return checkOnlyWith(givenFlags(kctx), m.onlyWith())
}

// each gives every flag of flags the same mode.
func each(ok bool, mode string, flags ...string) []onlyWith {
	rules := make([]onlyWith, len(flags))
	for i, f := range flags {
		rules[i] = onlyWith{f, ok, mode}
	}
	return rules
}

func (cmd *initCmd) onlyWith() []onlyWith {
	row, _ := recipe.LookupRule(cmd.Rule)
	return []onlyWith{
		{"gamma", row.Param == recipe.ParamGamma, "--rule " + recipe.RuleForParam(recipe.ParamGamma) + " (the rule that reads γ)"},
		{"std", row.Param == recipe.ParamStd, "--rule " + recipe.RuleForParam(recipe.ParamStd) + " (the rule that reads std)"},
	}
}

func (cmd *generateCmd) onlyWith() []onlyWith {
	return each(cmd.Temperature > 0, "--temperature > 0 (0 is greedy decoding, which draws nothing)", "top-k", "top-p", "seed")
}

func (c *reportCmd) onlyWith() []onlyWith {
	scored := strings.Contains(c.Compare, "=")
	return append(each(scored, "--compare A=DIR,B=DIR (a comparison file given to --compare is already scored)", "compare-windows", "compare-bins"),
		onlyWith{"width", c.Screenshot != "", "--screenshot"},
		onlyWith{"heatmap-tensor", !c.NoHeatmaps, "the heatmaps (not with --no-heatmaps)"})
}

func (cmd *evalTasksCmd) onlyWith() []onlyWith {
	return []onlyWith{{"shots", len(cmd.Fewshot) > 0, "--fewshot NAME=FILE (the file the examples come from)"}}
}

func (cmd *probesMakeCmd) onlyWith() []onlyWith {
	return each(cmd.Task == "", "the text probes (not with --task, whose size is --n)", "test", "table", "kinds", "digits")
}

func (cmd *anchorMakeCmd) onlyWith() []onlyWith {
	return []onlyWith{{"examples", cmd.Task == "anchor", "--task anchor"}, {"per-combo", cmd.Task == "anchor-mix", "--task anchor-mix"}}
}

func (cmd *coordcheckCmd) onlyWith() []onlyWith {
	return each(!cmd.PrintPlan, "a check that runs (--print-plan prints the plan as written)", "gamma", "widths", "steps", "set", "lr", "seed", "json")
}

func (cmd *demoCmd) onlyWith() []onlyWith {
	return append(each(!cmd.PrintPlan, "a demo that runs (--print-plan prints the plan file as written)", "out", "minutes", "steps", "seed", "windows", "probes"),
		onlyWith{"minutes", cmd.Steps == 0, "no --steps (--steps sets the steps per run, so the budget is not sized)"})
}

func (cmd *analyzeCmd) onlyWith() []onlyWith {
	return each(cmd.Tokens != "", "--tokens (the activation metrics' probe windows are cut from it; without it only the weights are measured)", "probes", "probe-len")
}

func (cmd *anchorDiagramCmd) onlyWith() []onlyWith {
	return []onlyWith{{"mix-depth", cmd.PerCombo != 0, "the mix task (not with --per-combo 0, which skips it)"}}
}

func (c *sweepRunCmd) onlyWith() []onlyWith {
	return []onlyWith{{"jobs", c.Index < 0, "every run (--index trains one run, on all --cores)"}}
}

func (cmd *dataPrepareCmd) onlyWith() []onlyWith {
	return []onlyWith{{"tokenizer-sample-mb", cmd.Tokenizer == "", "a tokenizer to train (not with --tokenizer)"}}
}

// planFlags are study's flags that act only on some plans: a coordinate-check plan runs none of the training
// flags, and with --steps the budget is not sized, so only a plan whose budget also picks a tier or seeds
// (experiment.Plan.BudgetChooses) reads it.
func (cmd *studyCmd) planFlags(p *experiment.Plan) []onlyWith {
	return append(each(p.Kind == experiment.KindTrain, "a training plan (a coordinate-check plan takes its options from its file)",
		"steps", "budget", "seeds", "jobs", "index", "data", "precision", "force", "engine", "device", "torch-python", "torch-path"),
		onlyWith{"budget", cmd.Steps == 0 || p.BudgetChooses(), "no --steps (--steps sets the steps per run, and this plan's budget picks no tier or seeds)"},
		onlyWith{"jobs", cmd.Index < 0, "every run (--index trains one run)"},
		onlyWith{"force", cmd.Steps == 0 && cmd.Index < 0 && !cmd.PrintPlan, forceMode})
}

// forceMode is where --force acts: the check of a sized budget's expected wall time, made before training.
const forceMode = "a budget the plan sizes and checks before training (not with --steps, --index or --print-plan)"

func (cmd *reproduceCmd) onlyWith() []onlyWith {
	return []onlyWith{{"force", cmd.Steps == 0 && !cmd.PrintPlan, forceMode}}
}
