package docs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// modulePath is the import path every package of the repository starts with.
const modulePath = "github.com/smallinit/smallinit/"

// floor is one storey of the house (STYLE's layers): its packages import only packages on lower floors, and
// packages of their own floor only when peers is set, and then, on a floor with a peerImports list, only the
// peers their line of it names.
type floor struct {
	name        string
	peers       bool
	packages    []string
	peerImports map[string][]string
}

// floors are the layers, lowest first. docs/reference.md's "Layout" section lists the same floors with the same
// packages (TestReferenceLayoutMatchesFloors); a new package gets a row here and a name there.
var floors = []floor{
	{"internal", true, []string{"internal/allocs", "internal/atomicfile", "internal/finitejson", "internal/fulldisk",
		"internal/inputfile", "internal/progress", "internal/runlock", "internal/workers", "internal/dirname",
		"internal/filesum"}, nil},
	{"ground", false, []string{"corpus", "corpus/ood", "fit", "kernel", "override", "probes/probescore",
		"safetensors", "stats", "tokenizer", "tune"}, nil},
	{"recipe", true, []string{"arch", "recipe", "diag/diagrec", "train/rundir"}, nil},
	{"model", true, []string{"model", "model/modeltest"}, nil},
	{"rules", true, []string{"data", "gammainit", "optim"}, nil},
	{"loop", true, []string{"budget", "coordcheck", "diag", "eval", "probes", "scale", "train"}, nil},
	{"studies", true, []string{"analyze", "anchor", "audit", "experiment", "report", "reproduce", "summary",
		"sweep"}, studiesImports},
	{"commands", false, []string{"cmd/smallinit", "docs", "python"}, nil},
}

// studiesImports is every arrow between two packages of the studies floor, package -> the peers it may import
// (the way Go's go/build/deps_test.go lists them): a new arrow is a reviewed line here, and an arrow no longer
// drawn is a line to remove. Written from the imports of 2026-12-07 and kept by hand; imports of lower floors
// are the floors' business, not this list's.
var studiesImports = map[string][]string{
	"analyze":    {"report", "summary"}, // Score: a run's summary row, computed from its final model
	"anchor":     {"report"},
	"audit":      {},
	"experiment": {"analyze", "report", "summary", "sweep"},
	"report":     {"summary"},
	"reproduce":  {"analyze", "anchor", "experiment", "report", "summary"}, // analyze: the ladder readout scores finished runs (analyze.Score)
	"summary":    {},
	"sweep":      {},
}

// onlyImportedBy names packages that only the listed packages may import: experiment's runners belong to the
// command line and to the one study design, reproduce, which drives its own plan through them one way (Start,
// Train, WriteReport: experiment never calls back into it), and the
// model's test fixtures to tests (test imports are not in the graph, so no importer is allowed).
var onlyImportedBy = map[string][]string{
	"experiment":      {"cmd/smallinit", "reproduce"},
	"model/modeltest": {},
}

// neverImports names packages that must not import the listed packages directly: report reads files and
// draws, so it loads no model and calls no kernel.
var neverImports = map[string][]string{
	"report": {"model", "kernel", "eval", "probes", "analyze", "experiment"},
}

// neverBuilds names packages whose build (every transitive import) must leave out the listed packages.
var neverBuilds = map[string][]string{
	"kernel": {"model"},
	// report reads run directories (train/rundir), recipes (recipe, arch) and diag's records (diag/diagrec),
	// which stand below the model, so it builds without the model and its kernels.
	"report":       {"model", "kernel", "eval", "probes"},
	"arch":         {"kernel"},
	"recipe":       {"kernel"},
	"train/rundir": {"model", "kernel"},
	"diag/diagrec": {"model", "kernel"},
	"summary":      {"model", "kernel", "eval", "probes"}, // summary.json is read by report, which only reads and draws
}

// floorOf maps each package (relative to the module) to its floor's index.
func floorOf() map[string]int {
	at := map[string]int{}
	for i, f := range floors {
		for _, p := range f.packages {
			at[p] = i
		}
	}
	return at
}

// layerViolations checks an import graph (package -> its non-test imports, every name relative to the module
// and only the module's packages) against floors, onlyImportedBy and deps (package -> its whole build, as `go
// list -deps` gives it). It returns one line per broken rule, sorted.
func layerViolations(imports, deps map[string][]string) []string {
	at := floorOf()
	var bad []string
	for pkg, imps := range imports {
		fp, ok := at[pkg]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: on no floor (add it to docs/layers_test.go and docs/reference.md)", pkg))
			continue
		}
		for _, imp := range imps {
			fi, ok := at[imp]
			switch {
			case !ok:
				continue // reported as the package itself
			case fi > fp:
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s, which stands above it (%s)", pkg, floors[fp].name, imp, floors[fi].name))
			case fi == fp && !floors[fp].peers:
				bad = append(bad, fmt.Sprintf("%s imports %s on its own floor (%s), whose packages import nothing beside them", pkg, imp, floors[fp].name))
			case fi == fp && floors[fp].peerImports != nil && !slices.Contains(floors[fp].peerImports[pkg], imp):
				bad = append(bad, fmt.Sprintf("%s imports %s on its own floor (%s), an arrow its list does not name (if it is meant, add %q to %s's line of the %s floor's imports in docs/layers_test.go)",
					pkg, imp, floors[fp].name, imp, pkg, floors[fp].name))
			}
			if allowed, ok := onlyImportedBy[imp]; ok && !slices.Contains(allowed, pkg) {
				bad = append(bad, fmt.Sprintf("%s imports %s, which only %v may import", pkg, imp, allowed))
			}
		}
	}
	for pkg, never := range neverImports {
		for _, n := range never {
			if slices.Contains(imports[pkg], n) {
				bad = append(bad, fmt.Sprintf("%s imports %s", pkg, n))
			}
		}
	}
	for _, f := range floors {
		for pkg, allowed := range f.peerImports {
			if !slices.Contains(f.packages, pkg) {
				bad = append(bad, fmt.Sprintf("%s: has a line in the %s floor's imports but is not on that floor", pkg, f.name))
				continue
			}
			for _, imp := range allowed {
				if _, there := imports[pkg]; there && !slices.Contains(imports[pkg], imp) {
					bad = append(bad, fmt.Sprintf("%s no longer imports %s: remove it from %s's line of the %s floor's imports in docs/layers_test.go", pkg, imp, pkg, f.name))
				}
			}
		}
		for _, pkg := range f.packages {
			if _, listed := f.peerImports[pkg]; f.peerImports != nil && !listed {
				bad = append(bad, fmt.Sprintf("%s: no line in the %s floor's imports in docs/layers_test.go (add one naming the peers it imports)", pkg, f.name))
			}
		}
	}
	for pkg := range at {
		if _, ok := imports[pkg]; !ok {
			bad = append(bad, fmt.Sprintf("%s: on a floor but not in the module", pkg))
		}
	}
	for pkg, never := range neverBuilds {
		for _, n := range never {
			if slices.Contains(deps[pkg], n) {
				bad = append(bad, fmt.Sprintf("%s builds with %s", pkg, n))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// goList runs `go list` with args from the repository root and returns, per package of the module, the module
// packages of the list the template's {{range}} gives (one line per package: the package, then its list).
func goList(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], modulePath) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], modulePath)
		graph[pkg] = []string{}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, modulePath) {
				graph[pkg] = append(graph[pkg], strings.TrimPrefix(imp, modulePath))
			}
		}
	}
	return graph
}

// TestImportsKeepTheFloors reads the module's import graph with `go list` and checks it against the floors: no
// package imports one above it, the ground imports nothing of the project but internal helpers, only the
// command line imports experiment's runners, and the neverBuilds packages stay out of the listed builds.
func TestImportsKeepTheFloors(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on the PATH")
	}
	imports := goList(t, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	deps := map[string][]string{}
	for pkg := range neverBuilds {
		d := goList(t, "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./"+pkg)
		deps[pkg] = d[pkg]
	}
	for _, v := range layerViolations(imports, deps) {
		t.Error(v)
	}
}

// TestLayerViolationsFindsBadImports plants bad imports in a small graph and checks that each is reported, and
// that the graph without them passes.
func TestLayerViolationsFindsBadImports(t *testing.T) {
	good := func() map[string][]string {
		g := map[string][]string{}
		for _, f := range floors {
			for _, p := range f.packages {
				g[p] = []string{}
			}
		}
		for pkg, peers := range studiesImports {
			g[pkg] = slices.Clone(peers)
		}
		g["model"] = []string{"kernel", "override"}
		g["train"] = []string{"model", "kernel", "optim"}
		g["cmd/smallinit"] = []string{"experiment", "report"}
		return g
	}
	if v := layerViolations(good(), nil); len(v) != 0 {
		t.Fatalf("the clean graph: %q, want no violation", v)
	}
	tests := []struct {
		name    string
		plant   func(imports, deps map[string][]string)
		wantSub string
	}{
		{"a ground package imports the model", func(g, _ map[string][]string) { g["kernel"] = []string{"model"} }, "kernel (ground) imports model"},
		{"a ground package imports a ground peer", func(g, _ map[string][]string) { g["fit"] = []string{"stats"} }, "fit imports stats on its own floor"},
		{"the model imports train", func(g, _ map[string][]string) { g["model"] = []string{"train"} }, "model (model) imports train"},
		{"python imports experiment", func(g, _ map[string][]string) { g["python"] = []string{"experiment"} }, "python imports experiment, which only"},
		{"a studies package imports a peer its line does not name", func(g, _ map[string][]string) { g["audit"] = []string{"sweep"} },
			`audit imports sweep on its own floor (studies), an arrow its list does not name (if it is meant, add "sweep" to audit's line`},
		{"a studies arrow is no longer drawn", func(g, _ map[string][]string) { g["report"] = []string{} }, "report no longer imports summary: remove it"},
		{"a package imports the model's test fixtures", func(g, _ map[string][]string) { g["eval"] = []string{"model/modeltest"} }, "eval imports model/modeltest"},
		{"a package on no floor", func(g, _ map[string][]string) { g["newpkg"] = nil }, "newpkg: on no floor"},
		{"a floor names a package that is gone", func(g, _ map[string][]string) { delete(g, "tune") }, "tune: on a floor but not in the module"},
		{"a build takes in a forbidden package", func(_, d map[string][]string) { d["kernel"] = []string{"model"} }, "kernel builds with model"},
		{"report loads a model itself", func(g, _ map[string][]string) { g["report"] = append(g["report"], "model") }, "report imports model"},
		{"report builds with the model", func(_, d map[string][]string) { d["report"] = []string{"recipe", "model"} }, "report builds with model"},
		{"the run reader builds with the kernels", func(_, d map[string][]string) { d["train/rundir"] = []string{"kernel"} }, "train/rundir builds with kernel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, d := good(), map[string][]string{}
			tc.plant(g, d)
			v := layerViolations(g, d)
			if len(v) != 1 || !strings.Contains(v[0], tc.wantSub) {
				t.Errorf("violations %q, want exactly one containing %q", v, tc.wantSub)
			}
		})
	}
}

// floorLine is a line of reference.md's Layout section naming a floor: "- **name**: `pkg`, `pkg` (what), ...".
var floorLine = regexp.MustCompile("^- \\*\\*([a-z]+)\\*\\*: (.*)$")

// backticked picks the package names out of a floor line.
var backticked = regexp.MustCompile("`([a-z/]+)`")

// TestReferenceLayoutMatchesFloors checks that docs/reference.md's Layout section lists the floors of the
// layering test, in order, each with exactly its packages, so the picture a reader sees is the one CI holds.
func TestReferenceLayoutMatchesFloors(t *testing.T) {
	b, err := os.ReadFile("reference.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []floor
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layout"
			continue
		}
		m := floorLine.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		f := floor{name: m[1]}
		for _, p := range backticked.FindAllStringSubmatch(m[2], -1) {
			f.packages = append(f.packages, p[1])
		}
		sort.Strings(f.packages)
		got = append(got, f)
	}
	if len(got) != len(floors) {
		t.Fatalf("reference.md's Layout lists %d floors, the layering test %d", len(got), len(floors))
	}
	for i, f := range floors {
		want := slices.Sorted(slices.Values(f.packages))
		if got[i].name != f.name || !slices.Equal(got[i].packages, want) {
			t.Errorf("reference.md's Layout floor %d: %s %v, want %s %v", i, got[i].name, got[i].packages, f.name, want)
		}
	}
}
