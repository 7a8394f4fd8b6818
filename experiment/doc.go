// Package experiment owns the studies: a plan is data (a TOML file) — named recipes (arms, in groups) × seeds
// × a budget — and this package is the one code path that sizes it (package budget's probes on the base
// recipe and its time model, recorded in OUT/sizing.json), runs it (each arm's runs directly, each sweep group through package sweep,
// locally with jobs or one index per scheduler task), summarises it (package summary) and assembles its
// report (package report). The demo and the coordinate check are built-in plans, embedded from plans/*.toml
// (the reproduction's plan is its own, in package reproduce); `smallinit demo --print-plan` shows one and
// `smallinit study FILE` runs a user's plan with the same machinery.
//
// A study design on top of a plan (package reproduce: its hypotheses, δ, priors and power, its anchor grid and
// its claims) drives an execution one way: Start prepares and sizes (the design's extra work and scoring
// handed over as data: Options.Extra, ScoreTokens), Register prints and records the plan (with the design's
// Description.Statement first), Train trains and returns what it ran, the design judges that outcome itself,
// and WriteReport writes the report with the design's comparison (Outcome.Compare). experiment never calls the
// design. The design reads its own tables and tier keys of the plan file ([primaries]' hypotheses, [anchor],
// its keys of each [[tier]]) through Plan.DecodeStudy and Plan.DecodeStudyTiers; experiment reads only the
// horizon ([primaries]' width, recipe, tokens per parameter, horizon series and spike threshold: Horizon).
//
// Recipes use the one override language of package override: dotted keys of a `smallinit train` run config
// with TOML values, parsed once into typed values, so a plan's `"model.qk_norm" = true` is a bool all the way
// to train.LoadSets.
//
// A plan may also name budget tiers ([[tier]]: seeds, the ladder group's widths, the LR sweep's widths, a
// smoke-test statement), a learning-rate sweep ([tune]: package tune over short trials scored on the
// LR-selection slice, tuning.go) and groups whose arms derive keys (lr = "tuned", emulate_eps, ladder, their
// own seeds; tier.go). Describe prints what a budget will run before anything trains.
package experiment
