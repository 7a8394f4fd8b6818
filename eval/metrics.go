package eval

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Metric is one number of a task's summary. StdErr is NaN when the metric has none (a count, a chance level).
// A proportion (an accuracy, a rate) also carries a 95% interval [Lo, Hi] that stays honest at 0 and 1, where
// its standard error is 0 (docs/definitions.md §5); Lo and Hi are NaN for every other metric.
type Metric struct {
	Name   string
	Value  float64
	StdErr float64
	Lo, Hi float64
	N      int    // observations behind Value (documents, or tokens for per-token lm losses)
	Note   string // what a reader must know to read Value ("over 2 of the 67 subjects"), or ""
}

// HasStdErr reports whether the metric carries a standard error.
func (m Metric) HasStdErr() bool { return !math.IsNaN(m.StdErr) }

// HasInterval reports whether the metric carries a 95% interval (proportions), shown instead of ± StdErr.
func (m Metric) HasInterval() bool { return !math.IsNaN(m.Lo) && !math.IsNaN(m.Hi) }

// Metrics is a task's summary in report order; it marshals to a JSON object keyed by metric name
// ({"acc": {"value": 0.25, "stderr": 0.097, "ci95": [0.112, 0.469], "n": 20}, ...}), non-finite numbers as
// null; "ci95" only on proportions.
type Metrics []Metric

// Get returns the metric called name.
func (ms Metrics) Get(name string) (Metric, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// MarshalJSON writes the metrics as an object in report order.
func (ms Metrics) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Name)
		b.Write(k)
		b.WriteString(`:{"value":`)
		b.WriteString(jsonFloat(m.Value))
		if m.HasStdErr() {
			b.WriteString(`,"stderr":`)
			b.WriteString(jsonFloat(m.StdErr))
		}
		if m.HasInterval() {
			b.WriteString(`,"ci95":[`)
			b.WriteString(jsonFloat(m.Lo))
			b.WriteByte(',')
			b.WriteString(jsonFloat(m.Hi))
			b.WriteByte(']')
		}
		b.WriteString(`,"n":`)
		b.WriteString(strconv.Itoa(m.N))
		if m.Note != "" {
			note, _ := json.Marshal(m.Note)
			b.WriteString(`,"note":`)
			b.Write(note)
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func jsonFloat(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "null"
	}
	return strconv.FormatFloat(x, 'g', 8, 64)
}

// BinomialStdErr is the standard error sqrt(p(1−p)/n) of an accuracy p over n independent documents.
func BinomialStdErr(p float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return math.Sqrt(p * (1 - p) / float64(n))
}

// z95 is the standard normal quantile of 0.975: a two-sided 95% interval is ±z95 standard errors wide.
const z95 = 1.959963984540054

// Wilson is the 95% Wilson score interval of a proportion of hits in n independent trials (docs/definitions.md
// §5): the p whose normal test against hits/n does not reject at 5%. Unlike p ± z·SE it is never empty and
// never leaves [0, 1]: 0 of 20 gives [0, 0.161], not 0 ± 0. n = 0 gives NaN, NaN.
func Wilson(hits, n int) (lo, hi float64) {
	if n <= 0 {
		return math.NaN(), math.NaN()
	}
	nf, p, z2 := float64(n), float64(hits)/float64(n), z95*z95
	den := 1 + z2/nf
	mid := (p + z2/(2*nf)) / den
	half := z95 / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi = math.Max(0, mid-half), math.Min(1, mid+half)
	if hits == 0 {
		lo = 0
	}
	if hits == n {
		hi = 1
	}
	return lo, hi
}

// accuracy is a hit counter.
type accuracy struct{ hits, n int }

func (a *accuracy) add(ok bool) {
	a.n++
	if ok {
		a.hits++
	}
}

func (a accuracy) metric(name string) Metric {
	if a.n == 0 {
		return noMetric(name)
	}
	p := float64(a.hits) / float64(a.n)
	lo, hi := Wilson(a.hits, a.n)
	return Metric{Name: name, Value: p, StdErr: BinomialStdErr(p, a.n), Lo: lo, Hi: hi, N: a.n}
}

// mean accumulates a mean and its standard error s/sqrt(n) (s the sample standard deviation), with Welford's
// update so that long streams of losses stay accurate.
type mean struct {
	n     int
	mu, m float64
}

func (a *mean) add(x float64) {
	a.n++
	d := x - a.mu
	a.mu += d / float64(a.n)
	a.m += d * (x - a.mu)
}

func (a mean) stderr() float64 {
	if a.n < 2 {
		return math.NaN()
	}
	return math.Sqrt(a.m / float64(a.n-1) / float64(a.n))
}

func (a mean) metric(name string) Metric {
	if a.n == 0 {
		return noMetric(name)
	}
	return Metric{Name: name, Value: a.mu, StdErr: a.stderr(), Lo: math.NaN(), Hi: math.NaN(), N: a.n}
}

// plain is a metric without a standard error.
func plain(name string, v float64, n int) Metric {
	return Metric{Name: name, Value: v, StdErr: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), N: n}
}

// noMetric is a metric with no observations: every number NaN.
func noMetric(name string) Metric {
	return Metric{Name: name, Value: math.NaN(), StdErr: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
}
