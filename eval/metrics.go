package eval

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Metric is one number of a task's summary. StdErr is NaN when the metric has none (a count, a chance level).
type Metric struct {
	Name   string
	Value  float64
	StdErr float64
	N      int // observations behind Value (documents, or tokens for per-token lm losses)
}

// HasStdErr reports whether the metric carries a standard error.
func (m Metric) HasStdErr() bool { return !math.IsNaN(m.StdErr) }

// Metrics is a task's summary in report order; it marshals to a JSON object keyed by metric name
// ({"acc": {"value": 0.25, "stderr": 0.097, "n": 20}, ...}), non-finite numbers as null.
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
		b.WriteString(`,"n":`)
		b.WriteString(strconv.Itoa(m.N))
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
		return Metric{Name: name, Value: math.NaN(), StdErr: math.NaN()}
	}
	p := float64(a.hits) / float64(a.n)
	return Metric{Name: name, Value: p, StdErr: BinomialStdErr(p, a.n), N: a.n}
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
		return Metric{Name: name, Value: math.NaN(), StdErr: math.NaN()}
	}
	return Metric{Name: name, Value: a.mu, StdErr: a.stderr(), N: a.n}
}

// plain is a metric without a standard error.
func plain(name string, v float64, n int) Metric {
	return Metric{Name: name, Value: v, StdErr: math.NaN(), N: n}
}
