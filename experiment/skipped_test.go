package experiment

import (
	"context"
	"strings"
	"testing"
)

// TestLeftOutGroupsAreLogged: a study says what it leaves out of its summary and report: a sweep group's runs
// (not in summary.json) and a group named in report.exclude, each by name with the reason.
func TestLeftOutGroupsAreLogged(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: prepares a corpus and trains 3 runs")
	}
	text := "summary = true\n" + strings.Replace(myPlanForTest, "[[group]]", "[report]\nexclude = [\"grid\"]\n[[group]]", 1) +
		"[[group]]\nname = \"grid\"\naxes = { \"init.gamma\" = [0.5, 1] }\n"
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := Run(context.Background(), p, Options{Out: t.TempDir(), Steps: 1, Windows: 2, Log: &log}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"group grid: a sweep, whose runs summary.json leaves out",
		"report: group grid left out (report.exclude)",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
}
