package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// Kind is a task's record format and scoring rule.
type Kind string

// Task kinds. Multiple-choice kinds score every choice's continuation by its log-likelihood; LAMBADA is a cloze
// (greedy completion of the last word); the generative kinds complete a prompt greedily and check the answer.
const (
	// KindHellaSwag: {ind, activity_label, ctx_a, ctx_b, endings[4], label} (or ctx alone). Query
	// preprocess(activity_label + ": " + ctx), ctx being ctx_a + " " + ctx_b capitalised whenever both are there
	// (as the harness builds it, even beside ctx), continuations " " + preprocess(ending), with the harness's
	// preprocess (strip, " [title]" → ". ", drop "[...]", "  " → " ").
	KindHellaSwag Kind = "hellaswag"
	// KindMultipleChoice (ARC, PIQA): {query, choices[], gold}. Context query (trailing whitespace removed) +
	// "\nAnswer:", continuations " " + choice: the harness's "Question: ...\nAnswer: choice" for the files'
	// "Question: ..." queries. Hugging Face allenai/ai2_arc's {question, choices{text, label}, answerKey} reads
	// as the same ("Question: " + question).
	KindMultipleChoice Kind = "mc"
	// KindWinoGrande: {context_options[2], continuation, gold}. The shared continuation " " + continuation is
	// scored under each context (the harness's partial scoring).
	KindWinoGrande Kind = "winogrande"
	// KindLambada: {context, continuation}, or {text} (lm-evaluation-harness's lambada_openai: the last word is
	// the continuation). Greedy accuracy and loss of " " + continuation (the last word).
	KindLambada Kind = "lambada"
	// KindGSM8K: {question, answer}, gold after "#### " (commas removed). Prompt "Question: q\nAnswer:", few-shot
	// targets " " + answer; strict-match and flexible-extract exact match as in the harness.
	KindGSM8K Kind = "gsm8k"
	// KindMATH: {problem, solution, answer}. Prompt "Problem: p\nSolution:", few-shot targets " " + solution;
	// exact match of NormalizeMath(final \boxed{} answer) against the answer field (or the solution's boxed
	// answer when the record has none).
	KindMATH Kind = "math"
	// KindMGSM: TSV lines question<TAB>answer_number, no header. Prompt "Question: q\nAnswer:", few-shot targets
	// " " + number; strict = the first line of the completion is the number, flexible = the last number in it.
	KindMGSM Kind = "mgsm"
	// KindCMATH: {input, golden}. Prompt "问题：q\n答案：", few-shot targets the answer; strict and flexible as MGSM.
	KindCMATH Kind = "cmath"
	// KindProbe: {prompt, answer, kind, chance} from MakeProbes (chance optional). The prompt is used verbatim;
	// the completion's first line, trimmed, must equal the answer. Accuracies are reported overall, per probe
	// kind, and separately for reasoning kinds and memorisation kinds (names ending in "_mem"), each beside its
	// chance level (the mean of the records' chance) when every record of the group carries one.
	KindProbe Kind = "probe"
	// KindLM: plain text. Loss per token and bits per byte over rolling windows of the context length.
	KindLM Kind = "lm"
	// KindCMMLU: CMMLU's released CSV files (",Question,A,B,C,D,Answer"), one file or a directory of
	// per-subject files; four-choice, scored as lm-evaluation-harness does (see cmmlu.go), accuracy overall
	// and per subject.
	KindCMMLU Kind = "cmmlu"
	// KindCEval: C-Eval's released CSV files ("id,question,A,B,C,D,answer,explanation"), its dev and val
	// splits (test has no answers); scored as CMMLU with C-Eval's descriptions.
	KindCEval Kind = "ceval"
)

// kindAliases maps task names (and the part of a name before the first "_", "-" or ".") to kinds: the kinds'
// own names and the names lm-evaluation-harness and the benchmarks' releases use for them.
var kindAliases = map[string]Kind{
	"hellaswag": KindHellaSwag, "mc": KindMultipleChoice, "arc": KindMultipleChoice, "arc_easy": KindMultipleChoice,
	"arc_challenge": KindMultipleChoice, "ai2_arc": KindMultipleChoice, "piqa": KindMultipleChoice,
	"winogrande": KindWinoGrande, "lambada": KindLambada, "lambada_openai": KindLambada,
	"lambada_standard": KindLambada, "gsm8k": KindGSM8K, "gsm8k_cot": KindGSM8K, "math": KindMATH,
	"math500": KindMATH, "math_500": KindMATH, "hendrycks_math": KindMATH, "hendrycks_math500": KindMATH,
	"minerva_math": KindMATH, "minerva_math500": KindMATH, "mgsm": KindMGSM, "mgsm_en": KindMGSM,
	"mgsm_zh": KindMGSM, "mgsm_direct_en": KindMGSM, "mgsm_direct_zh": KindMGSM, "cmath": KindCMATH,
	"cmmlu": KindCMMLU, "ceval": KindCEval, "ceval-valid": KindCEval, "c-eval": KindCEval, "ceval_valid": KindCEval,
	"probe": KindProbe, "probes": KindProbe, "lm": KindLM, "text": KindLM,
}

// KindNames lists the accepted task names and kinds, sorted.
func KindNames() []string {
	var names []string
	for n := range kindAliases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KindOf returns the kind of a task name: the name itself if it is a known name (arc_easy, lambada_openai,
// ...), else its part before the first "_", "-" or "." (mgsm_zh → mgsm, probe-test → probe). "NAME:KIND" names
// the kind explicitly.
func KindOf(name string) (Kind, error) {
	if n, k, ok := strings.Cut(name, ":"); ok {
		if kind, ok := kindAliases[strings.ToLower(k)]; ok && n != "" {
			return kind, nil
		}
		return "", fmt.Errorf("task %q: unknown kind %q (known: %s)", name, k, strings.Join(KindNames(), ", "))
	}
	low := strings.ToLower(name)
	if k, ok := kindAliases[low]; ok {
		return k, nil
	}
	if i := strings.IndexAny(low, "_-."); i > 0 {
		if k, ok := kindAliases[low[:i]]; ok {
			return k, nil
		}
	}
	return "", fmt.Errorf("task %q: cannot tell its kind from the name (name it after one of %s, or write NAME:KIND)", name, strings.Join(KindNames(), ", "))
}

// TaskSpec is one task to run: a name (reported), its kind, the record file, and optionally a file of few-shot
// examples in the same format.
type TaskSpec struct {
	Name    string
	Kind    Kind
	File    string
	Fewshot string
}

// ParseTaskArg parses "NAME=FILE" (or "NAME:KIND=FILE").
func ParseTaskArg(arg string) (TaskSpec, error) {
	name, file, ok := strings.Cut(arg, "=")
	if !ok || name == "" || file == "" {
		return TaskSpec{}, fmt.Errorf("task %q: want NAME=FILE", arg)
	}
	kind, err := KindOf(name)
	if err != nil {
		return TaskSpec{}, err
	}
	if n, _, ok := strings.Cut(name, ":"); ok {
		name = n
	}
	return TaskSpec{Name: name, Kind: kind, File: file}, nil
}

// doc is one parsed record: what to score and how to check it.
type doc struct {
	line int
	// Multiple choice and cloze: each choice j scores conts[j] given contexts[j].
	contexts []string
	conts    []string
	choices  []string // the choice texts (delimiter excluded) whose byte lengths normalise acc_norm_bytes
	gold     int
	// Generative: the prompt, the gold target scored teacher-forced (and shown in few-shot examples), and the
	// gold answer checked against the completion.
	prompt, target, answer string
	probeKind              string
	probeChance            float64 // 0: not given
	shot                   string  // this record as a few-shot example
	subject                string  // the record's subject (per-subject kinds; else "")
}

// kindSpec is how one kind reads, prompts, checks and explains records: one row of kindSpecs per kind, so
// that a new kind is one row (its grader included, or TestEveryKindRowGrades fails) and one parser.
type kindSpec struct {
	parse func(line []byte) (doc, error) // line-based kinds: one non-blank line
	// CSV kinds (parse nil): one data row of a CSV file with a header row holding columns; the files may be
	// per-subject (a directory of them), the subject named by the file and looked up in subjects.
	parseRow    func(row csvRow) (doc, error)
	columns     []string
	subjects    map[string]string
	description func(subject string) string // before the few-shot examples and the record (nil: none)
	// grader turns the scored records into metrics; a generative grader makes the kind generate (grade.go).
	grader grader
	stop   []string // generation stops before these (generative kinds)
	// budget caps a generative kind's new tokens below --max-new-tokens for a record (nil: no cap of its own).
	budget   func(d *doc) int
	shotSep  string                      // between few-shot examples and before the record
	fields   []string                    // JSON kinds: the record's keys, named when a record of another layout is met (schema.go)
	optional []string                    // the fields a record may leave out
	shotFile func(subject string) string // per-subject kinds: the name of a subject's file in a few-shot directory

	// What `eval-tasks --help` and the text report say about the kind.
	grading  string // what scoring one record means and what it costs
	footnote string // under the kind's metrics in the text report ("" none)
	unit     string // what RunTask's progress counts ("": records)
}

// ProgressUnit names what RunTask's Options.Progress counts for the kind: "records", or "bytes" of text for
// lm tasks.
func (k Kind) ProgressUnit() string {
	if u := kindSpecs[k].unit; u != "" {
		return u
	}
	return "records"
}

// Shared help and footnote text of the kinds' rows.
const (
	mcGrading = "each choice's continuation scored by its log-likelihood; one forward pass per choice, no generation " +
		"(acc: the most likely choice is the gold one)"
	genGrading = "the gold answer scored teacher-forced, then a greedy completion of up to --max-new-tokens tokens " +
		"(stopping early at the kind's stop strings) checked against the answer; an untrained model runs to the limit, " +
		"so a record costs up to --max-new-tokens decoding steps"
	mcFootnote = "(acc_norm_bytes: log-likelihood divided by the choice's length in bytes; ll_margin: log p(gold) − max log p(other), nats)"
)

var kindSpecs = map[Kind]kindSpec{
	KindHellaSwag: {parse: parseHellaSwag, grader: mcGrader, shotSep: "\n\n", fields: []string{"activity_label", "ctx_a", "ctx_b", "ctx", "endings", "label"},
		optional: []string{"ctx_a", "ctx_b", "ctx"},
		grading:  mcGrading, footnote: mcFootnote},
	KindMultipleChoice: {parse: parseMC, grader: mcGrader, shotSep: "\n\n", fields: []string{"query", "choices", "gold"},
		grading: mcGrading, footnote: mcFootnote},
	KindWinoGrande: {parse: parseWinoGrande, grader: mcGrader, shotSep: "\n\n", fields: []string{"context_options", "continuation", "gold"},
		grading: "the shared continuation scored under each of the two contexts; two forward passes, no generation", footnote: mcFootnote},
	KindLambada: {parse: parseLambada, grader: clozeGrader, shotSep: "\n\n", fields: []string{"context", "continuation"},
		grading: "the last word scored by its log-likelihood (acc: greedy decoding would give it); one forward pass, no generation"},
	KindGSM8K: {parse: parseGSM8K, grader: gsm8kGrader, stop: []string{"Question:", "</s>", "<|im_end|>"}, shotSep: "\n\n",
		fields: []string{"question", "answer"}, grading: genGrading},
	KindMATH: {parse: parseMATH, grader: mathGrader, stop: []string{"Problem:"}, shotSep: "\n\n",
		fields: []string{"problem", "solution", "answer"}, optional: []string{"answer"}, grading: genGrading},
	KindMGSM: {parse: parseMGSM, grader: numericGrader, stop: []string{"Question:", "</s>", "<|im_end|>", "\n\n"}, shotSep: "\n\n",
		grading: genGrading},
	KindCMATH: {parse: parseCMATH, grader: numericGrader, stop: []string{"问题：", "\n\n"}, shotSep: "\n\n",
		fields: []string{"input", "golden"}, grading: genGrading},
	KindProbe: {parse: parseProbe, grader: probeGrader, stop: []string{"\n"},
		// The answer, its space and a line break take at most len(answer)+2 tokens; one more shows whether the
		// line ends there.
		budget: func(d *doc) int { return len(d.answer) + 3 }, shotSep: "\n", fields: []string{"prompt", "answer", "kind", "chance"}, optional: []string{"chance"},
		grading: "the answer scored teacher-forced, then a greedy completion of at most the answer's length + 3 tokens, " +
			"its first line checked",
		footnote: "(chance: what the best guess that does not do the task scores, the mean of the records' chance; memorisation\n" +
			"  kinds on held-out prompts are at chance by design, on recall prompts they measure memorisation)"},
	KindCMMLU: {parseRow: parseChineseMC, grader: subjectMCGrader, columns: chineseMCColumns, subjects: cmmluSubjects,
		description: cmmluDescription, shotSep: "\n\n", shotFile: func(s string) string { return s + ".csv" }, grading: mcGrading + "; four one-letter choices", footnote: mcFootnote},
	KindCEval: {parseRow: parseChineseMC, grader: subjectMCGrader, columns: chineseMCColumns, subjects: cevalSubjects,
		description: cevalDescription, shotSep: "\n\n", shotFile: func(s string) string { return s + "_dev.csv" }, grading: mcGrading + "; four one-letter choices", footnote: mcFootnote},
	// lm tasks are read by RunTask itself (plain text, not records); the row holds their help.
	KindLM: {unit: "bytes", grading: "plain text cut into windows of the context length, each scored in one forward pass; a \"record\" is a window"},
}

// KindHelp describes every kind for `eval-tasks --help`: its task names, what scoring a record means and what
// it costs.
func KindHelp() string {
	names := map[Kind][]string{}
	for n, k := range kindAliases {
		if n != string(k) {
			names[k] = append(names[k], n)
		}
	}
	var b strings.Builder
	b.WriteString("Task kinds (the names that select each, then what one record costs and what \"scored\" means):\n\n")
	for _, k := range slices.Sorted(maps.Keys(kindSpecs)) {
		slices.Sort(names[k])
		fmt.Fprintf(&b, "%s", k)
		if len(names[k]) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(names[k], ", "))
		}
		fmt.Fprintf(&b, ": %s.\n\n", kindSpecs[k].grading)
	}
	return strings.TrimRight(b.String(), "\n")
}

// strictJSON decodes one JSON record into v and rejects trailing data.
func strictJSON(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(v); err != nil {
		// Valid JSON of another shape is a layout problem, not a syntax one: name the field.
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			return fmt.Errorf("%q is a JSON %s, want %s", te.Field, te.Value, te.Type)
		}
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return errors.New("invalid JSON: data after the record")
	}
	return nil
}

// parseIndex reads a gold index given as a number or a numeric string (Hugging Face HellaSwag's "3").
func parseIndex(raw json.RawMessage, n int, field string) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, fmt.Errorf("missing %q", field)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	i, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("%q is %s, want an integer index", field, raw)
	}
	if i < 0 || i >= n {
		return 0, fmt.Errorf("%q is %d, outside [0, %d)", field, i, n)
	}
	return i, nil
}

func required(field string, v *string) error {
	if v == nil {
		return fmt.Errorf("missing %q", field)
	}
	return nil
}

var hellaswagBrackets = regexp.MustCompile(`\[.*?\]`)

// hellaswagPreprocess is the harness's HellaSwag preprocess.
func hellaswagPreprocess(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, " [title]", ". ")
	s = hellaswagBrackets.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, "  ", " ")
}

// capitalize is Python's str.capitalize: the first character upper case, the rest lower case.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + strings.ToLower(s[n:])
}

// check refuses a multiple-choice doc with an empty choice: an empty continuation has log-likelihood 0, the
// largest there is, so it would win every record whatever the model (HellaSwag endings ["", ""] scored).
func (d *doc) check() error {
	for i, c := range d.conts {
		if len(d.choices) > 0 && strings.TrimSpace(c) == "" {
			return fmt.Errorf("choice %d is empty: an empty continuation would always win", i)
		}
	}
	return nil
}

// mcDoc builds a multiple-choice doc whose choices share one context.
func mcDoc(ctx string, choices []string, gold int) doc {
	d := doc{choices: choices, gold: gold}
	for _, c := range choices {
		d.contexts = append(d.contexts, ctx)
		d.conts = append(d.conts, " "+c)
	}
	d.shot = ctx + " " + choices[gold]
	return d
}

func parseHellaSwag(line []byte) (doc, error) {
	var r struct {
		ActivityLabel *string         `json:"activity_label"`
		Ctx           *string         `json:"ctx"`
		CtxA          *string         `json:"ctx_a"`
		CtxB          *string         `json:"ctx_b"`
		Endings       []string        `json:"endings"`
		Label         json.RawMessage `json:"label"`
	}
	if err := strictJSON(line, &r); err != nil {
		return doc{}, err
	}
	if err := required("activity_label", r.ActivityLabel); err != nil {
		return doc{}, err
	}
	ctx := ""
	switch {
	case r.CtxA != nil && r.CtxB != nil:
		ctx = *r.CtxA + " " + capitalize(*r.CtxB) // the harness's context, even beside ctx: ctx_b capitalised
	case r.Ctx != nil:
		ctx = *r.Ctx
	default:
		return doc{}, errors.New(`missing "ctx" (or "ctx_a" and "ctx_b")`)
	}
	if len(r.Endings) < 2 {
		return doc{}, fmt.Errorf("%d endings, want at least 2", len(r.Endings))
	}
	gold, err := parseIndex(r.Label, len(r.Endings), "label")
	if err != nil {
		return doc{}, err
	}
	choices := make([]string, len(r.Endings))
	for i, e := range r.Endings {
		choices[i] = hellaswagPreprocess(e)
	}
	return mcDoc(hellaswagPreprocess(*r.ActivityLabel+": "+ctx), choices, gold), nil
}

// parseMC reads a multiple-choice record in either layout KindMultipleChoice accepts: {query, choices[], gold}
// (llm-foundry's and the harness's preprocessed files), or Hugging Face allenai/ai2_arc's {question,
// choices{text[], label[]}, answerKey}, which reads as the harness's arc task builds it: query "Question: " +
// question, choices choices.text, gold the index of answerKey in choices.label.
func parseMC(line []byte) (doc, error) {
	var r struct {
		Query     *string         `json:"query"`
		Question  *string         `json:"question"`
		Choices   json.RawMessage `json:"choices"`
		Gold      json.RawMessage `json:"gold"`
		AnswerKey *string         `json:"answerKey"`
	}
	if err := strictJSON(line, &r); err != nil {
		return doc{}, err
	}
	if r.Query == nil && r.Question != nil && r.AnswerKey != nil {
		return parseARC(*r.Question, r.Choices, *r.AnswerKey)
	}
	if err := required("query", r.Query); err != nil {
		return doc{}, err
	}
	var choices []string
	if len(r.Choices) > 0 {
		if err := json.Unmarshal(r.Choices, &choices); err != nil {
			return doc{}, fmt.Errorf(`"choices" is %s, want a list of strings`, truncateRaw(r.Choices))
		}
	}
	if len(choices) < 2 {
		return doc{}, fmt.Errorf("%d choices, want at least 2", len(choices))
	}
	gold, err := parseIndex(r.Gold, len(choices), "gold")
	if err != nil {
		return doc{}, err
	}
	return mcDoc(strings.TrimRightFunc(*r.Query, unicode.IsSpace)+"\nAnswer:", choices, gold), nil
}

// parseARC reads the Hugging Face allenai/ai2_arc layout (parseMC).
func parseARC(question string, raw json.RawMessage, answerKey string) (doc, error) {
	var c struct {
		Text  []string `json:"text"`
		Label []string `json:"label"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || len(raw) == 0 {
		return doc{}, fmt.Errorf(`"choices" is %s, want {"text": [...], "label": [...]} (allenai/ai2_arc)`, truncateRaw(raw))
	}
	if len(c.Text) < 2 || len(c.Text) != len(c.Label) {
		return doc{}, fmt.Errorf(`"choices" has %d texts and %d labels, want at least 2 of each, as many labels as texts`, len(c.Text), len(c.Label))
	}
	gold := slices.Index(c.Label, answerKey)
	if gold < 0 {
		return doc{}, fmt.Errorf(`"answerKey" %q is none of the labels %q`, answerKey, c.Label)
	}
	return mcDoc("Question: "+strings.TrimRightFunc(question, unicode.IsSpace)+"\nAnswer:", c.Text, gold), nil
}

func parseWinoGrande(line []byte) (doc, error) {
	var r struct {
		Options      []string        `json:"context_options"`
		Continuation *string         `json:"continuation"`
		Gold         json.RawMessage `json:"gold"`
	}
	if err := strictJSON(line, &r); err != nil {
		return doc{}, err
	}
	if err := required("continuation", r.Continuation); err != nil {
		return doc{}, err
	}
	if len(r.Options) != 2 {
		return doc{}, fmt.Errorf("%d context_options, want 2", len(r.Options))
	}
	gold, err := parseIndex(r.Gold, 2, "gold")
	if err != nil {
		return doc{}, err
	}
	cont := strings.TrimSpace(*r.Continuation)
	d := doc{gold: gold}
	for _, o := range r.Options {
		d.contexts = append(d.contexts, o)
		d.conts = append(d.conts, " "+cont)
		d.choices = append(d.choices, cont)
	}
	d.shot = r.Options[gold] + " " + cont
	return d, nil
}

// parseLambada reads a cloze record in either layout KindLambada accepts: {context, continuation}, or
// {"text"} (lm-evaluation-harness's EleutherAI/lambada_openai, and Hugging Face lambada with its "domain"),
// whose target is the last word: the context is the text up to its last space, the continuation what follows,
// as the harness's lambada_openai task splits it.
func parseLambada(line []byte) (doc, error) {
	var r struct {
		Context      *string `json:"context"`
		Continuation *string `json:"continuation"`
		Text         *string `json:"text"`
	}
	if err := strictJSON(line, &r); err != nil {
		return doc{}, err
	}
	if r.Context == nil && r.Continuation == nil && r.Text != nil {
		i := strings.LastIndexByte(*r.Text, ' ')
		if i < 0 {
			return doc{}, errors.New(`"text" has no space: no context before its last word`)
		}
		ctx, cont := (*r.Text)[:i], (*r.Text)[i+1:]
		r.Context, r.Continuation = &ctx, &cont
	}
	if err := required("context", r.Context); err != nil {
		return doc{}, err
	}
	if err := required("continuation", r.Continuation); err != nil {
		return doc{}, err
	}
	ctx, cont := strings.TrimRightFunc(*r.Context, unicode.IsSpace), strings.TrimSpace(*r.Continuation)
	if cont == "" {
		return doc{}, errors.New(`empty "continuation"`)
	}
	return doc{contexts: []string{ctx}, conts: []string{" " + cont}, choices: []string{cont}, shot: ctx + " " + cont}, nil
}

func genDoc(prompt, target, answer string) doc {
	return doc{prompt: prompt, target: target, answer: answer, shot: prompt + target}
}

func parseGSM8K(line []byte) (doc, error) {
	var r struct {
		Question *string `json:"question"`
		Answer   *string `json:"answer"`
	}
	if err := strictJSON(line, &r); err != nil {
		return doc{}, err
	}
	if err := required("question", r.Question); err != nil {
		return doc{}, err
	}
	if err := required("answer", r.Answer); err != nil {
		return doc{}, err
	}
	if !strings.Contains(*r.Answer, "#### ") {
		return doc{}, errors.New(`"answer" has no "#### " before the final number`)
	}
	gold := CleanNumber(*r.Answer)
	if gold == "" {
		return doc{}, errors.New(`"answer" has nothing after "#### "`)
	}
	return genDoc("Question: "+*r.Question+"\nAnswer:", " "+*r.Answer, gold), nil
}

func parseMATH(line []byte) (doc, error) {
	var r struct {
		Problem  *string `json:"problem"`
		Solution *string `json:"solution"`
		Answer   *string `json:"answer"`
	}
	if err := strictJSON(line, &r); err != nil {
		return doc{}, err
	}
	if err := required("problem", r.Problem); err != nil {
		return doc{}, err
	}
	if err := required("solution", r.Solution); err != nil {
		return doc{}, err
	}
	var gold string
	if r.Answer != nil && strings.TrimSpace(*r.Answer) != "" {
		gold = *r.Answer
	} else if b, ok := LastBoxed(*r.Solution); ok {
		gold = b
	} else {
		return doc{}, errors.New(`no "answer" and no \boxed{} answer in "solution"`)
	}
	return genDoc("Problem: "+*r.Problem+"\nSolution:", " "+*r.Solution, gold), nil
}

func parseMGSM(line []byte) (doc, error) {
	f := strings.Split(string(line), "\t")
	if len(f) != 2 {
		return doc{}, fmt.Errorf("%d tab-separated fields, want question<TAB>answer_number", len(f))
	}
	q, a := strings.TrimSpace(f[0]), CleanNumber(strings.TrimSpace(f[1]))
	if q == "" {
		return doc{}, errors.New("empty question")
	}
	if _, err := strconv.ParseFloat(a, 64); err != nil {
		return doc{}, fmt.Errorf("answer_number %s is not a number", inputfile.Quote(f[1]))
	}
	return genDoc("Question: "+q+"\nAnswer:", " "+a, a), nil
}

func parseCMATH(line []byte) (doc, error) {
	var r struct {
		Input  *string `json:"input"`
		Golden *string `json:"golden"`
	}
	if err := strictJSON(line, &r); err != nil {
		return doc{}, err
	}
	if err := required("input", r.Input); err != nil {
		return doc{}, err
	}
	if err := required("golden", r.Golden); err != nil {
		return doc{}, err
	}
	a := CleanNumber(strings.TrimSpace(*r.Golden))
	if a == "" {
		return doc{}, errors.New(`empty "golden"`)
	}
	return genDoc("问题："+*r.Input+"\n答案：", a, a), nil
}

func parseProbe(line []byte) (doc, error) {
	var p Probe
	if err := strictJSON(line, &p); err != nil {
		return doc{}, err
	}
	switch {
	case p.Prompt == "":
		return doc{}, errors.New(`missing "prompt"`)
	case strings.TrimSpace(p.Answer) == "" || strings.Contains(p.Answer, "\n"):
		return doc{}, errors.New(`"answer" must be one non-empty line`)
	case p.Kind == "":
		return doc{}, errors.New(`missing "kind"`)
	case p.Chance < 0 || p.Chance > 1:
		return doc{}, fmt.Errorf(`"chance" %g: must be in [0, 1]`, p.Chance)
	}
	d := genDoc(p.Prompt, " "+p.Answer, strings.TrimSpace(p.Answer))
	d.probeKind, d.probeChance = p.Kind, p.Chance
	return d, nil
}

// gradeNumeric is the strict and flexible check of MGSM and CMATH completions: strict = the first non-empty
// line, cleaned, is the answer; flexible = the last number, cleaned, is the answer (numbers compared as
// strings or values).
func gradeNumeric(out, gold string) (strict, flexible bool) {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			strict = numbersEqual(CleanNumber(l), gold)
			break
		}
	}
	if n, ok := ExtractFlexible(out); ok {
		flexible = numbersEqual(CleanNumber(n), gold)
	}
	return strict, flexible
}

// gradeGSM8K is the harness's GSM8K check: strict-match and flexible-extract, cleaned, equal to the gold
// string.
func gradeGSM8K(out, gold string) (strict, flexible bool) {
	if n, ok := ExtractStrict(out); ok {
		strict = CleanNumber(n) == gold
	}
	if n, ok := ExtractFlexible(out); ok {
		flexible = CleanNumber(n) == gold
	}
	return strict, flexible
}

// probeCorrect: the completion's first line, trimmed, is the answer.
func probeCorrect(out, answer string) bool {
	line, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(line) == answer
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
