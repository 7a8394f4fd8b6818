// Package eval scores language models on benchmark tasks (the probe task among them; package probes makes
// the probe datasets) and generates text (docs/definitions.md §5 "Evaluation").
//
// # Scoring
//
// Task logic and the model meet at two small interfaces, so that the metrics can be checked against a fake
// whose log-likelihoods are known: a Scorer returns the log-likelihood of a continuation given a context
// (multiple choice, cloze, the gold answers of generative tasks), a Generator completes prompts greedily. LM is
// the implementation on a model.Model: it tokenises each request, left-truncates contexts to the model's
// context length, and packs many requests into one ForwardSeq, one request per row. Rows are right-padded to
// the longest request of the forward; causal attention means a request's positions never see the padding after
// them, so packing does not change any score (requests are sorted by length so that little is padded). The one
// exception is an MoE model with a capacity factor, whose expert capacity is shared by every row of a forward.
//
// # Tasks
//
// A task is a file in one of the record formats of Kind (HellaSwag, ARC and PIQA, WinoGrande, LAMBADA, GSM8K,
// MATH, MGSM, CMATH, probes, plain text), or for CMMLU and C-Eval their released CSV files (one file or a
// directory of per-subject files, reported per subject too). RunTask streams it record by record, scores records in chunks, and
// returns accuracies with binomial standard errors sqrt(p(1−p)/n) and 95% Wilson intervals (honest at 0 and
// 1, where the standard error is 0) and mean losses with the standard error of the mean. With a limit, a
// directory of per-subject files is read round-robin so that the records spread over the subjects. Tiny models sit at chance on hard benchmarks, so every multiple-choice task also reports smooth
// metrics: the gold continuation's mean loss per token and its log-likelihood margin over the best distractor
// (ll_margin, nats). acc_norm_bytes divides each choice's log-likelihood by the length in bytes of the choice
// text without its leading space (lm-evaluation-harness's acc_norm divides by characters: the same for ASCII).
// Malformed records are reported with file and line and skipped (counted), or are fatal in strict mode; a
// record of another layout names the one its kind reads and the nearest known one (schema.go). Each kind is one
// row of kindSpecs: its parser, prompt, grading, help text and report footnote.
// Requests that do not fit the context keep their end; TaskResult.Truncation counts them where it happened
// (scored contexts, generation prompts). LM.Special chooses how text spelling a special token is encoded
// (SpecialParse, as Hugging Face tokenizers and the harness do, or SpecialLiteral); see docs/evaluation.md.
//
// # Generation
//
// A Stepper holds one sequence and returns the next-token logits after appending tokens; PrefixStepper
// recomputes the whole prefix with ForwardSeq, model.Decoder is a key/value-cache implementation of the same
// interface. Generate samples from any Stepper (greedy, temperature, top-k, top-p) and streams the text, holding
// back bytes that could still become a stop string or that end in the middle of a UTF-8 character.
// CompareSteppers checks one Stepper against another token for token.
package eval
