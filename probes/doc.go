// Package probes makes the reasoning and memorisation probe datasets: the probes themselves (Make), a probe set
// on disk (WriteSet), and a probe mix of the embedded corpus for training (WriteMix) with its scorer (Score).
// The records are eval.Probe, which eval's probe task (eval.KindProbe) reads.
//
// Reasoning probes: tasks small enough that a tiny model trained for minutes can learn them when they are
// mixed into its training text, each with a "memorisation" counterpart of the same surface form whose answers
// are a fixed random function of the prompt, so they can only be memorised. Comparing the two separates
// learning an algorithm (held-out prompts of a reasoning kind are answered) from memorising a table (only
// prompts seen in training are answered).
//
// Every prompt is "KEYWORD: PAYLOAD =" and the training line is the prompt, a space and the answer. Symbols are
// separated by spaces so that any byte-level BPE gives each digit, letter or bracket its own token. The
// memorisation counterpart of a kind writes its keyword with a "~" (add~) and is named kind + "_mem".
//
// Addition writes every number least-significant digit first, zero-padded to a fixed width ("add: 2 8 4 +
// 7 3 9 =" → "9 1 4 1" is 482 + 937 = 1419; see addGen). A causal model then emits each digit of the sum
// right after the digit below it, which decides its carry, and at the same distance from the operand digits of
// its place for every place. Written most-significant digit first, the carry into the leading digit must be
// predicted before any other digit; with only the sum reversed, or with unpadded operands, where an answer
// digit's inputs sit depends on the place and on the operands' lengths. In the measurements of the README's
// Probes section a tiny model learns 2-digit sums in this format within 1000 steps and stayed at chance in the
// two others tried. Lee et al., "Teaching Arithmetic to Small Transformers" (2023), report the same for
// reversed sums.
//
// Each probe carries its chance level: the probability that the best guess which knows the answer's form, but
// does not do the task, is right (see Probe.Chance), so that an accuracy can be read against it.
package probes
