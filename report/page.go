package report

import (
	"bytes"
	"fmt"
	"html/template"
)

// PageSpec is a page of figures and tables that another package (reproduce, anchor) has to show: sections of
// text, Charts, tables and preformatted text. WritePage draws it in the report's style.
type PageSpec struct {
	Title    string
	Intro    []string // paragraphs under the title
	Sections []Section
}

// Section is one headed part of a page.
type Section struct {
	ID, Heading string
	Text        []string // paragraphs before the figures
	Charts      []Chart
	Tables      []Table
	Pre         string // preformatted text after the tables ("" for none)
}

// Table is a table of text cells.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// pageView is what the sections template shows.
type pageView struct {
	Title    string
	Intro    []string
	Sections []sectionView
}

type sectionView struct {
	Section
	Figures []figView
}

var sectionsTemplate = template.Must(template.Must(template.New("sections").Parse(pageCSS)).Parse(`{{template "head" .}}{{range .Intro}}<p class="meta">{{.}}</p>
{{end}}
{{range .Sections}}
<section{{if .ID}} id="{{.ID}}"{{end}}>
<h2>{{.Heading}}</h2>
{{range .Text}}<p>{{.}}</p>
{{end}}
{{range .Figures}}<figure class="figure" data-figure="{{.ID}}" data-points="{{.Points}}" data-series="{{.Series}}">
{{.SVGHTML}}
{{if .Legend}}<ul class="legend">{{range .Legend}}<li><span class="{{.Class}}" style="{{.Style}}"></span>{{.Label}}</li>{{end}}</ul>{{end}}
{{.Extra}}
{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}
</figure>
{{end}}
{{range .Tables}}<table>
{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}
{{if .Pre}}<pre>{{.Pre}}</pre>{{end}}
</section>
{{end}}
</main>
</body>
</html>
`))

// RenderPage draws every chart of the page and lays it out as one self-contained HTML page. A chart that
// cannot be drawn is an error naming it.
func RenderPage(p PageSpec) ([]byte, error) {
	v := pageView{Title: p.Title, Intro: p.Intro}
	for _, s := range p.Sections {
		sv := sectionView{Section: s}
		for _, ch := range s.Charts {
			f, err := DrawChart(ch)
			if err != nil {
				return nil, fmt.Errorf("report: page %q: %w", p.Title, err)
			}
			sv.Figures = append(sv.Figures, newFigView(*f))
		}
		v.Sections = append(v.Sections, sv)
	}
	var buf bytes.Buffer
	if err := sectionsTemplate.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("report: page %q: %w", p.Title, err)
	}
	return buf.Bytes(), nil
}

// WritePage renders the page and writes it to path atomically.
func WritePage(path string, p PageSpec) error {
	b, err := RenderPage(p)
	if err != nil {
		return err
	}
	return writePage(path, b)
}
