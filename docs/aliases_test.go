package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// deprecatedWithRelease is the only mark that lets a cross-package alias or forwarder stand: a `Deprecated:`
// paragraph that names the release removing it (Go's io/ioutil keeps its forwarders the same way).
var deprecatedWithRelease = regexp.MustCompile(`(?m)^Deprecated:.*\bv\d+\.\d+`)

// crossPackageAliases returns, as "file:line: name", every exported name a file declares as a second front door
// to another package of this module's name (STYLE's "One name for each thing"): an alias `type X = pkg.Y` (generic or not), a
// re-export `var X = pkg.Y` or `const X = pkg.Y`, and a forwarder, an exported func whose body is only
// `return pkg.F(its own parameters, in order)` (or the bare call). A name whose doc comment is deprecatedWithRelease
// is left out.
func crossPackageAliases(fset *token.FileSet, f *ast.File) []string {
	imported := map[string]bool{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if !strings.HasPrefix(p, modulePath) {
			continue // a standard or third-party name given a meaning here (MaxSeed = math.MaxInt64) is a new name
		}
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		imported[name] = true
	}
	// foreign reports whether e is pkg.Name, or pkg.Name[T...], for an imported package.
	foreign := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && imported[id.Name]
	}
	marked := func(docs ...*ast.CommentGroup) bool {
		for _, d := range docs {
			if d != nil && deprecatedWithRelease.MatchString(d.Text()) {
				return true
			}
		}
		return false
	}
	var found []string
	report := func(pos token.Pos, name string) {
		p := fset.Position(pos)
		found = append(found, p.Filename+":"+strconv.Itoa(p.Line)+": "+name)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Assign.IsValid() && s.Name.IsExported() && foreign(s.Type) && !marked(s.Doc, d.Doc) {
						report(s.Pos(), s.Name.Name)
					}
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if i < len(s.Values) && n.IsExported() && foreign(s.Values[i]) && !marked(s.Doc, d.Doc) {
							report(n.Pos(), n.Name)
						}
					}
				}
			}
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.IsExported() && forwards(d, foreign) && !marked(d.Doc) {
				report(d.Pos(), d.Name.Name)
			}
		}
	}
	return found
}

// forwards reports whether fn's body is one statement, `return pkg.F(params...)` or `pkg.F(params...)`, passing
// fn's own parameters in their order and nothing else.
func forwards(fn *ast.FuncDecl, foreign func(ast.Expr) bool) bool {
	if fn.Body == nil || len(fn.Body.List) != 1 {
		return false
	}
	var call *ast.CallExpr
	switch s := fn.Body.List[0].(type) {
	case *ast.ReturnStmt:
		if len(s.Results) == 1 {
			call, _ = s.Results[0].(*ast.CallExpr)
		}
	case *ast.ExprStmt:
		call, _ = s.X.(*ast.CallExpr)
	}
	if call == nil || !foreign(call.Fun) {
		return false
	}
	var params []string
	for _, fld := range fn.Type.Params.List {
		for _, n := range fld.Names {
			params = append(params, n.Name)
		}
	}
	if len(call.Args) != len(params) {
		return false
	}
	for i, a := range call.Args {
		if id, ok := a.(*ast.Ident); !ok || id.Name != params[i] {
			return false
		}
	}
	return true
}

// TestNoCrossPackageAliases walks every non-test Go file of the repository and refuses an alias or forwarder of
// another package's name unless it is deprecatedWithRelease: each floor package's names are the only names,
// used with its own prefix.
func TestNoCrossPackageAliases(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir("..", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			if p != ".." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		found = append(found, crossPackageAliases(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: an alias or forwarder of another package's name (use that name with its own prefix, or mark it `// Deprecated:` with the release that removes it)", f)
	}
}

// TestCrossPackageAliasesFindsPlanted proves the walk catches each kind of second front door, and passes what is
// not one: a type of its own, a wrapper that adds work, a local alias and a marked deprecation.
func TestCrossPackageAliasesFindsPlanted(t *testing.T) {
	const head = "package p\n\nimport (\n\t\"math\"\n\n\t\"" + modulePath + "recipe\"\n\tal \"" + modulePath + "arch\"\n)\n\n"
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"type alias", "type Config = recipe.Config\n", []string{"Config"}},
		{"renamed import", "type Preset = al.Preset\n", []string{"Preset"}},
		{"generic alias", "type Line[T any] = recipe.Line[T]\n", []string{"Line"}},
		{"const block", "const (\n\tKeyGamma = recipe.KeyGamma\n\tlocal = recipe.KeyLR\n)\n", []string{"KeyGamma"}},
		{"var", "var Table = recipe.Table\n", []string{"Table"}},
		{"forwarder", "func Load(p string, n int) (int, error) { return recipe.Load(p, n) }\n", []string{"Load"}},
		{"generic forwarder", "func Get[T any](r R) T { return recipe.Get[T](r) }\n", []string{"Get"}},
		{"void forwarder", "func Set(x int) { recipe.Set(x) }\n", []string{"Set"}},
		{"deprecated without release", "// Deprecated: use recipe.Config.\ntype Config = recipe.Config\n", []string{"Config"}},
		{"deprecated with release", "// Config is old.\n//\n// Deprecated: use recipe.Config; removed in v0.9.\ntype Config = recipe.Config\n", nil},
		{"own type", "type Run struct{ *recipe.Run }\n", nil},
		{"local alias", "type T = int\n\ntype U = T\n", nil},
		{"unexported forwarder", "func load(p string) error { return recipe.Load(p) }\n", nil},
		{"adds work", "func Load(p string) (C, error) {\n\tc, err := recipe.Load(p)\n\treturn c, err\n}\n", nil},
		{"other args", "func Open(r *Run) error { return recipe.Open(r.Run) }\n", nil},
		{"method", "func (r *Run) Steps() []int { return recipe.Steps() }\n", nil},
		{"call value", "var Default = recipe.Default()\n", nil},
		{"standard library value", "const MaxSeed = math.MaxInt64\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", head+tc.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range crossPackageAliases(fset, f) {
				got = append(got, s[strings.LastIndex(s, " ")+1:])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("found %q, want %q", got, tc.want)
			}
		})
	}
}
