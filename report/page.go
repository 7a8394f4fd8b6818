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

// pageView is what the page template shows: every page report writes (the report of runs, Build, and the
// pages of other packages, RenderPage) is one of these.
type pageView struct {
	Title    string
	Intro    []string      // paragraphs under the title
	Lead     []sectionView // sections before the list of links: what a reader must see first (the results)
	Nav      []navView     // a list of links to sections under the intro (none: no list)
	Sections []sectionView
}

// navView is one link of a page's list of sections.
type navView struct{ ID, Title string }

// sectionView is one section: its text, figures, tables, list and preformatted text, in that order.
type sectionView struct {
	ID, Heading string
	Text        []string // paragraphs before the figures
	Figures     []figView
	Tables      []tableView
	Meta        []string   // small paragraphs after the tables
	Items       []itemView // a list after them
	ItemsClass  string
	Pre         string
}

// tableView is a table of cells, each optionally classed ("num": right-aligned digits) and led by a colour
// swatch, rows optionally classed ("incomplete").
type tableView struct {
	Class, Caption string
	Header         []string
	Rows           []rowView
}

type rowView struct {
	Class string
	Cells []cellView
}

type cellView struct {
	Text, Class string
	Swatch      template.CSS // a swatch's style before the text ("": none)
}

// itemView is one list item: an optional bold lead, then text.
type itemView struct{ Bold, Text string }

// plainTable is a Table of text cells as the page template shows it.
func plainTable(t Table) tableView {
	v := tableView{Caption: t.Caption, Header: t.Header}
	for _, r := range t.Rows {
		var cells []cellView
		for _, c := range r {
			cells = append(cells, cellView{Text: c})
		}
		v.Rows = append(v.Rows, rowView{Cells: cells})
	}
	return v
}

// pageTemplate lays out every page report writes.
var pageTemplate = template.Must(template.Must(template.New("page").Parse(pageCSS)).Parse(`{{template "head" .}}{{range .Intro}}<p class="meta">{{.}}</p>
{{end}}{{range .Lead}}{{template "section" .}}{{end}}{{if .Nav}}<nav><ol>
{{range .Nav}}<li><a href="#{{.ID}}">{{.Title}}</a></li>
{{end}}</ol></nav>
{{end}}
{{range .Sections}}{{template "section" .}}{{end}}
</main>
</body>
</html>
{{define "section"}}
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
{{range .Tables}}<table{{if .Class}} class="{{.Class}}"{{end}}>
{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Class}} class="{{.Class}}"{{end}}>{{range .Cells}}<td{{if .Class}} class="{{.Class}}"{{end}}>{{if .Swatch}}<span class="sw" style="{{.Swatch}}"></span>{{end}}{{.Text}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}
{{range .Meta}}<p class="meta">{{.}}</p>
{{end}}
{{if .Items}}<ul{{if .ItemsClass}} class="{{.ItemsClass}}"{{end}}>{{range .Items}}<li>{{if .Bold}}<b>{{.Bold}}</b>: {{end}}{{.Text}}</li>{{end}}</ul>{{end}}
{{if .Pre}}<pre>{{.Pre}}</pre>{{end}}
</section>
{{end}}`))

// RenderPage draws every chart of the page and lays it out as one self-contained HTML page. A chart that
// cannot be drawn is an error naming it.
func RenderPage(p PageSpec) ([]byte, error) {
	v := pageView{Title: p.Title, Intro: p.Intro}
	for _, s := range p.Sections {
		sv := sectionView{ID: s.ID, Heading: s.Heading, Text: s.Text, Pre: s.Pre}
		for _, t := range s.Tables {
			sv.Tables = append(sv.Tables, plainTable(t))
		}
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
	if err := pageTemplate.Execute(&buf, v); err != nil {
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
