// Package scale takes smallinit beyond models that fit comfortably in one process: it writes freshly
// initialised checkpoints of the study's larger scales (0.1B to 1.5B parameters, arch.ScalePresets) tensor by
// tensor and shard by shard, without ever holding the model in memory, and it streams the weights of any
// checkpoint, one tensor at a time, for the weight diagnostics and the init audit.
//
// The streaming init (Init) takes every tensor's start and σ from gammainit and draws every matrix from its own
// gammainit.Stream, in element order, exactly as gammainit.Apply does on an in-memory model: a float32
// checkpoint is bit-identical to what model.Save writes after gammainit.Apply with the same config, recipe and
// seed, and a bfloat16 one holds those values rounded to nearest even (safetensors.F32ToBF16). Shard headers are
// safetensors.EncodeHeader's.
package scale
